import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Pod } from '@nodelet/api';
import { createCriClient, PodSandboxState } from '@nodelet/cri';
import {
  freePort,
  MAIN,
  nodelet,
  parseTable,
  pollUntil,
  type RunResult,
  type TableRow,
} from '../test-helpers.js';
import { type ChildExit, TestChild } from './test-child.js';

/**
 * Helpers of the containerd end-to-end tests: `nodelet kubelet --runtime containerd` as a child process on
 * a temporary root, pod-logs and manifest directory (kept across a restart), and what a user would look
 * at besides nodelet — `ctr -n k8s.io`, the host-local IPAM store, /proc/mounts.
 *
 * The containerd is shared with other tests: every kubelet here has a node name of its own, and
 * nodelet's housekeeping only removes sandboxes labelled with its node name; the sweep at the end of a
 * file removes exactly those.
 */
export const NODE_LABEL = 'nodelet.dev/node';
export const IPAM_DIR = '/var/lib/cni/networks/nodelet';
export const BUSYBOX = 'nodelet.test/busybox:1';

/** A node name unique to this test process and file. */
export const nodeName = (what: string) => `e2e-${what}-${process.pid}`;

/** Directories a kubelet runs on; the same workspace is reused when a test restarts nodelet. */
export class Workspace {
  readonly dir = mkdtempSync(join(tmpdir(), 'nodelet-e2e-ctr-'));
  readonly manifests = join(this.dir, 'manifests');
  readonly root = join(this.dir, 'root');
  readonly podLogs = join(this.dir, 'pod-logs');
  readonly config = join(this.dir, 'nodelet.yaml');

  constructor(configText = '') {
    mkdirSync(this.manifests);
    writeFileSync(
      this.config,
      `apiVersion: nodelet.dev/v1alpha1\nkind: NodeletConfiguration\nkubelet:\n  podLogsDir: ./pod-logs\n${configText}`,
    );
  }

  write(name: string, text: string): void {
    writeFileSync(join(this.manifests, name), text);
  }

  remove(name: string): void {
    rmSync(join(this.manifests, name), { force: true });
  }

  /**
   * Removes the directory. A tmpfs the kubelet mounted for a pod still there (a test stopped before its
   * pod was deleted) is unmounted first, or rm would stop at the mount point.
   */
  async dispose(): Promise<void> {
    for (const { point } of mountsUnder(this.dir + '/').sort((a, b) => b.point.length - a.point.length)) {
      await exec('umount', [point]).catch(() => exec('umount', ['-l', point]));
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** `nodelet kubelet` on containerd (or another CRI endpoint, or the fake runtime) as a child process. */
export class KubeletChild {
  readonly server: string;
  /** The kubelet API (HTTPS; anonymous and AlwaysAllow, the flags' defaults). */
  readonly apiServer: string;
  private stderrText = '';
  private readonly proc: TestChild;

  private constructor(
    readonly ws: Workspace,
    readonly node: string,
    readonly port: number,
    readonly apiPort: number,
    private readonly child: ChildProcess,
  ) {
    this.server = `http://127.0.0.1:${port}`;
    this.apiServer = `https://127.0.0.1:${apiPort}`;
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (chunk: string) => (this.stderrText += chunk));
    this.proc = new TestChild(child);
  }

  /** Starts it and waits (bounded) until it says it is running. */
  static async start(
    ws: Workspace,
    node: string,
    extraArgs: string[] = [],
    runtime = 'containerd',
  ): Promise<KubeletChild> {
    const port = await freePort();
    const apiPort = await freePort();
    const child = spawn(
      process.execPath,
      [
        MAIN,
        'kubelet',
        '--runtime',
        runtime,
        '--port',
        String(apiPort),
        '--pod-manifest-path',
        ws.manifests,
        '--root-dir',
        ws.root,
        '--read-only-port',
        String(port),
        '--hostname-override',
        node,
        '--config',
        ws.config,
        ...extraArgs,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    const k = new KubeletChild(ws, node, port, apiPort, child);
    await pollUntil(
      'the kubelet to start',
      async () => {
        if (k.proc.exited) throw new Error(`nodelet kubelet exited during startup:\n${k.stderrText}`);
        return k.stderrText.includes('nodelet kubelet running') ? true : undefined;
      },
      { timeoutMs: 20_000, intervalMs: 50, describe: () => k.stderrText },
    );
    return k;
  }

  get pid(): number {
    return this.child.pid!;
  }

  get running(): boolean {
    return !this.proc.exited;
  }

  stderr(): string {
    return this.stderrText;
  }

  /** SIGTERM, SIGKILL after `graceMs`; resolves with how it ended. */
  stop(graceMs = 15_000): Promise<ChildExit> {
    return this.proc.stop(graceMs);
  }

  run(args: string[]): Promise<RunResult> {
    return nodelet([...args, '--server', this.server], 20_000);
  }

  /** Rows of `nodelet get pods`. */
  async rows(...args: string[]): Promise<TableRow[]> {
    const r = await this.run(['get', 'pods', ...args]);
    if (r.code !== 0) throw new Error(`nodelet get pods failed (${r.code}): ${r.stderr}`);
    return parseTable(r.stdout);
  }

  /** The pod as `nodelet get pods NAME -o json` shows it, or undefined. */
  async pod(name: string): Promise<Pod | undefined> {
    const r = await this.run(['get', 'pods', name, '-o', 'json']);
    if (r.code !== 0) return undefined;
    return JSON.parse(r.stdout) as Pod;
  }

  /** Polls `get pods -o json` until `ok(pod)`; the error says what was seen last. */
  async waitPod(name: string, what: string, ok: (pod: Pod) => boolean, timeoutMs = 60_000): Promise<Pod> {
    let last: Pod | undefined;
    return pollUntil(
      `${name}: ${what}`,
      async () => {
        last = await this.pod(name);
        return last && ok(last) ? last : undefined;
      },
      {
        timeoutMs,
        intervalMs: 250,
        describe: () =>
          `${JSON.stringify(last?.status, null, 1)}\n--- kubelet log (tail):\n${this.stderrText.slice(-3000)}`,
      },
    );
  }

  /** `nodelet logs` through the kubelet API (container logs are not on the read-only port). */
  logs(...args: string[]): Promise<RunResult> {
    return nodelet(['logs', ...args, '--server', this.apiServer], 20_000);
  }
}

/** The container status of `name`. */
export const containerStatus = (pod: Pod, name: string) =>
  [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])].find(
    (c) => c.name === name,
  );

export const isRunning = (pod: Pod, container: string) => !!containerStatus(pod, container)?.state?.running;

/** `runtime://id` → id. */
export const idOf = (containerID: string | undefined) => (containerID ?? '').replace(/^[a-z]+:\/\//, '');

function exec(command: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(command, args, { timeout: 20_000, encoding: 'utf8' }, (err, stdout, stderr) =>
      err ? reject(new Error(`${command} ${args.join(' ')}: ${stderr || err.message}`)) : resolve(stdout),
    ),
  );
}

/** Container ids in `ctr -n k8s.io containers ls` (sandboxes included). */
export async function ctrContainers(): Promise<Set<string>> {
  return new Set((await exec('ctr', ['-n', 'k8s.io', 'containers', 'ls', '-q'])).split('\n').filter(Boolean));
}

/** Task id → host PID from `ctr -n k8s.io task ls`. */
export async function ctrTaskPids(): Promise<Map<string, number>> {
  const out = await exec('ctr', ['-n', 'k8s.io', 'task', 'ls']);
  const pids = new Map<string, number>();
  for (const line of out.split('\n').slice(1)) {
    const [id, pid] = line.trim().split(/\s+/);
    if (id && pid && /^\d+$/.test(pid)) pids.set(id, Number(pid));
  }
  return pids;
}

/** Files of the host-local IPAM store holding `sandboxId` (`<ip>` files contain the container id). */
export function ipamFilesOf(sandboxId: string): string[] {
  let names: string[];
  try {
    names = readdirSync(IPAM_DIR);
  } catch {
    return [];
  }
  return names.filter((n) => {
    if (!/^\d+\.\d+\.\d+\.\d+$/.test(n)) return false;
    try {
      return readFileSync(join(IPAM_DIR, n), 'utf8').startsWith(sandboxId);
    } catch {
      return false;
    }
  });
}

/** Mount points (from /proc/self/mountinfo) under `dir`, with their file system types. */
export function mountsUnder(dir: string): Array<{ point: string; type: string }> {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => {
      const fields = line.split(' ');
      const dash = fields.indexOf('-');
      return { point: fields[4] ?? '', type: dash > 0 ? (fields[dash + 1] ?? '') : '' };
    })
    .filter((m) => m.point.startsWith(dir));
}

/** Sandbox ids of a node (by nodelet's node label), through CRI. */
export async function sandboxesOf(endpoint: string, node: string): Promise<string[]> {
  const client = createCriClient(endpoint, { timeoutMs: 30_000 });
  try {
    const { items } = await client.runtime.listPodSandbox({
      filter: { id: '', labelSelector: { [NODE_LABEL]: node } },
    });
    return items.map((s) => s.id);
  } finally {
    client.close();
  }
}

/** Ids of a node's sandboxes and containers (by nodelet's node label), through CRI. */
export async function idsOf(endpoint: string, node: string): Promise<Set<string>> {
  const client = createCriClient(endpoint, { timeoutMs: 30_000 });
  try {
    const selector = { [NODE_LABEL]: node };
    const [sandboxes, containers] = await Promise.all([
      client.runtime.listPodSandbox({ filter: { id: '', labelSelector: selector } }),
      client.runtime.listContainers({ filter: { id: '', podSandboxId: '', labelSelector: selector } }),
    ]);
    return new Set([...sandboxes.items.map((s) => s.id), ...containers.containers.map((c) => c.id)]);
  } finally {
    client.close();
  }
}

/**
 * Removes every sandbox (and so its containers) a node's kubelet left in containerd: the safety net of
 * `test.after.always`. RemovePodSandbox is retried on "device or resource busy" (netns removal, seen here).
 */
export async function sweepNode(endpoint: string, node: string): Promise<void> {
  await removeSandboxes(endpoint, { [NODE_LABEL]: node });
}

/**
 * Stops and removes the sandboxes matching `labelSelector` (every sandbox when it is undefined),
 * retrying the "device or resource busy" containerd answers while it removes a netns.
 */
export async function removeSandboxes(
  endpoint: string,
  labelSelector?: Record<string, string>,
): Promise<void> {
  const client = createCriClient(endpoint, { timeoutMs: 60_000 });
  try {
    const { items } = await client.runtime.listPodSandbox(
      labelSelector ? { filter: { id: '', labelSelector } } : {},
    );
    for (const sb of items) {
      if (sb.state === PodSandboxState.SANDBOX_READY)
        await client.runtime.stopPodSandbox({ podSandboxId: sb.id }).catch(() => undefined);
      await pollUntil(
        `sandbox ${sb.id} to be removed`,
        async () =>
          client.runtime.removePodSandbox({ podSandboxId: sb.id }).then(
            () => true,
            (err: Error) => (/busy/.test(err.message) ? undefined : Promise.reject(err)),
          ),
        { timeoutMs: 20_000, intervalMs: 500 },
      );
    }
  } finally {
    client.close();
  }
}

/** GET http://host:port/path from the host, with a deadline; resolves status and body. */
export function httpGet(
  host: string,
  port: number,
  path = '/',
  timeoutMs = 5000,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = get({ host, port, path, agent: false, timeout: timeoutMs }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    });
    req.on('timeout', () =>
      req.destroy(new Error(`GET http://${host}:${port}${path}: no answer in ${timeoutMs} ms`)),
    );
    req.on('error', reject);
  });
}

/** True when `ip` is in 10.88.0.0/16, the CNI bridge's range (scripts/containerd). */
export const inPodCidr = (ip: string | undefined) => !!ip && /^10\.88\.\d{1,3}\.\d{1,3}$/.test(ip);

/** A pod manifest: `containers` and `volumes` are YAML fragments indented for the spec. */
export function manifest(name: string, body: string): string {
  return `apiVersion: v1\nkind: Pod\nmetadata:\n  name: ${name}\nspec:\n  terminationGracePeriodSeconds: 2\n${body}`;
}
