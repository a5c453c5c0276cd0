/**
 * One `nodelet kubelet` child process as a node operator runs it, for benches that measure the process
 * itself: static pods from a manifest directory, the read-only port for /pods, /stats and /metrics,
 * its CPU time from /proc, and a stop by its PID.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { Agent, request } from 'node:http';
import { createServer } from 'node:net';
import { join } from 'node:path';
import type { Pod, PodList } from '@nodelet/api';

export interface KubeletProcessOptions {
  /** The CLI's entry point (packages/cli/dist/main.js). */
  cliMain: string;
  /** A fresh directory: manifests, root dir, pod logs and the config file go under it. */
  dir: string;
  runtime: 'containerd' | 'fake';
  /** The CRI socket, for a real runtime (unix://…). */
  endpoint?: string;
  nodeName: string;
  /** Extra node flags, e.g. ['--cpu-prof', '--cpu-prof-dir', DIR]. */
  nodeFlags?: string[];
}

/** Polls `probe` every `everyMs` until it gives a value; throws after `ms`. */
export async function pollUntil<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  ms: number,
  everyMs = 100,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export async function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** utime + stime of a process in ms (/proc/<pid>/stat; clock ticks of 10 ms). */
export async function processCpuMs(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

export async function processRssMiB(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1]) / 1024;
}

export class KubeletProcess {
  stderr = '';
  /** One kept-alive connection: the bench's reads add no connection setup to the kubelet's CPU. */
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 1 });

  private constructor(
    readonly child: ChildProcess,
    readonly port: number,
    readonly manifests: string,
  ) {
    child.stderr!.setEncoding('utf8').on('data', (s: string) => {
      if (this.stderr.length < 1 << 20) this.stderr += s;
    });
  }

  get pid(): number {
    return this.child.pid!;
  }

  static async start(o: KubeletProcessOptions): Promise<KubeletProcess> {
    const manifests = join(o.dir, 'manifests');
    await mkdir(manifests, { recursive: true });
    await writeFile(
      join(o.dir, 'nodelet.yaml'),
      'apiVersion: nodelet.dev/v1alpha1\nkind: NodeletConfiguration\nkubelet:\n  podLogsDir: ./pod-logs\n',
    );
    const port = await freeLoopbackPort();
    const child = spawn(
      process.execPath,
      [
        ...(o.nodeFlags ?? []),
        o.cliMain,
        'kubelet',
        '--runtime',
        o.runtime,
        ...(o.endpoint ? ['--container-runtime-endpoint', o.endpoint] : []),
        '--pod-manifest-path',
        manifests,
        '--root-dir',
        join(o.dir, 'root'),
        '--read-only-port',
        String(port),
        '--port',
        '0',
        '--hostname-override',
        o.nodeName,
        '--config',
        join(o.dir, 'nodelet.yaml'),
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    const k = new KubeletProcess(child, port, manifests);
    await pollUntil(
      'nodelet kubelet to start',
      async () => {
        if (child.exitCode !== null) throw new Error(`nodelet kubelet exited:\n${k.stderr}`);
        return k.stderr.includes('nodelet kubelet running') ? true : undefined;
      },
      60_000,
      50,
    );
    return k;
  }

  /** A GET on the read-only port: the body and how long the answer took (ms). */
  get(path: string, timeoutMs = 30_000): Promise<{ body: string; ms: number }> {
    const t0 = performance.now();
    return new Promise((resolve, reject) => {
      const req = request(
        { host: '127.0.0.1', port: this.port, path, agent: this.agent, timeout: timeoutMs },
        (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (body += c));
          res.on('end', () => {
            if (res.statusCode !== 200) reject(new Error(`GET ${path}: ${res.statusCode} ${body}`));
            else resolve({ body, ms: performance.now() - t0 });
          });
        },
      );
      req.on('timeout', () => req.destroy(new Error(`GET ${path}: timeout`)));
      req.on('error', reject);
      req.end();
    });
  }

  async pods(): Promise<Pod[]> {
    return (JSON.parse((await this.get('/pods')).body) as PodList).items;
  }

  /** Stops the process by its PID (SIGTERM; SIGKILL after 30 s) and waits for it to exit. */
  async stop(): Promise<void> {
    this.agent.destroy();
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise((r) => this.child.once('exit', r));
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 30_000);
    await exited;
    clearTimeout(timer);
  }
}
