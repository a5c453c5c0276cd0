import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Helpers for the end-to-end tests: they run the real `nodelet` command as a child process, as a user
 * would, and wait with bounded polling — a deadline, never a blind sleep.
 */
export const MAIN = fileURLToPath(new URL('./main.js', import.meta.url));

/** A port nobody listens on right now: listen on port 0, read it, close. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `node main.js ...args` to completion. */
export function nodelet(args: readonly string[], timeoutMs = 15_000): Promise<RunResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [MAIN, ...args],
      { timeout: timeoutMs, encoding: 'utf8' },
      (err, stdout, stderr) => {
        const code = err
          ? typeof (err as { code?: unknown }).code === 'number'
            ? (err as { code: number }).code
            : null
          : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/**
 * Polls `probe` until it returns a value other than undefined; throws with `what` and the last value seen after
 * the deadline. With NODELET_WAIT_LOG=<file> each wait appends `{what, waitedMs, timeoutMs, ok}` as a JSON
 * line: how the deadlines are checked against what each step takes on a loaded machine (they are 3× that).
 */
export async function pollUntil<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  options: { timeoutMs: number; intervalMs?: number; describe?: () => string },
): Promise<T> {
  const started = Date.now();
  const deadline = started + options.timeoutMs;
  const record = (ok: boolean) => {
    const log = process.env.NODELET_WAIT_LOG;
    if (log) {
      const entry = { what, waitedMs: Date.now() - started, timeoutMs: options.timeoutMs, ok };
      appendFileSync(log, JSON.stringify(entry) + '\n');
    }
  };
  for (;;) {
    const value = await probe();
    if (value !== undefined) {
      record(true);
      return value;
    }
    if (Date.now() >= deadline) {
      record(false);
      throw new Error(
        `timed out after ${options.timeoutMs} ms waiting for ${what}${options.describe ? `; last seen:\n${options.describe()}` : ''}`,
      );
    }
    await new Promise((r) => setTimeout(r, options.intervalMs ?? 100));
  }
}

export interface TableRow {
  [column: string]: string;
}

/** Parses a `get pods` table by its header's column starts. */
export function parseTable(text: string): TableRow[] {
  const lines = text.split('\n').filter((l) => l.trim() !== '');
  if (lines.length === 0) return [];
  const header = lines[0]!;
  const columns: Array<{ name: string; start: number }> = [];
  const re = /\S+(?: \S+)*/g;
  for (let m = re.exec(header); m; m = re.exec(header)) columns.push({ name: m[0], start: m.index });
  return lines.slice(1).map((line) => {
    const row: TableRow = {};
    columns.forEach((c, i) => {
      const end = columns[i + 1]?.start ?? line.length;
      row[c.name] = line.slice(c.start, end).trim();
    });
    return row;
  });
}

/** A `nodelet kubelet` child process on a temporary directory and a free port. */
export class KubeletProcess {
  readonly dir: string;
  readonly manifests: string;
  readonly server: string;
  private child?: ChildProcess;
  private stderrText = '';
  private exit?: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  private constructor(
    readonly port: number,
    readonly nodeName: string,
  ) {
    this.dir = mkdtempSync(join(tmpdir(), 'nodelet-e2e-'));
    this.manifests = join(this.dir, 'manifests');
    mkdirSync(this.manifests);
    this.server = `http://127.0.0.1:${port}`;
  }

  /**
   * Starts `nodelet kubelet --pod-manifest-path … --root-dir … --read-only-port … --hostname-override …`
   * and waits until it says it is running. Pod logs go under the temporary directory through a small
   * NodeletConfiguration, so a run as root does not write to /var/log/pods.
   */
  static async start(
    t: { teardown: (fn: () => void | Promise<void>) => void },
    nodeName = 'node1',
    extraArgs: readonly string[] = [],
  ): Promise<KubeletProcess> {
    const k = new KubeletProcess(await freePort(), nodeName);
    t.teardown(() => k.kill());
    writeFileSync(
      join(k.dir, 'nodelet.yaml'),
      `apiVersion: nodelet.dev/v1alpha1\nkind: NodeletConfiguration\nkubelet:\n  podLogsDir: ./pod-logs\n`,
    );
    const child = spawn(
      process.execPath,
      [
        MAIN,
        'kubelet',
        '--pod-manifest-path',
        k.manifests,
        '--root-dir',
        join(k.dir, 'root'),
        '--read-only-port',
        String(k.port),
        '--port',
        '0',
        '--hostname-override',
        nodeName,
        '--config',
        join(k.dir, 'nodelet.yaml'),
        ...extraArgs,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    k.child = child;
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (chunk: string) => (k.stderrText += chunk));
    k.exit = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    let exited = false;
    void k.exit.then(() => (exited = true));
    await pollUntil(
      'the kubelet to start',
      async () => {
        if (exited) throw new Error(`nodelet kubelet exited during startup:\n${k.stderrText}`);
        return k.stderrText.includes('nodelet kubelet running') ? true : undefined;
      },
      { timeoutMs: 45_000, intervalMs: 50, describe: () => k.stderrText },
    );
    return k;
  }

  get pid(): number {
    return this.child!.pid!;
  }

  stderr(): string {
    return this.stderrText;
  }

  writeManifest(name: string, text: string): void {
    writeFileSync(join(this.manifests, name), text);
  }

  removeManifest(name: string): void {
    rmSync(join(this.manifests, name));
  }

  /** `nodelet get pods --server <this kubelet> ...args`. */
  getPods(...args: string[]): Promise<RunResult> {
    return nodelet(['get', 'pods', '--server', this.server, ...args]);
  }

  /** Rows of `get pods`, or throws when the command failed. */
  async rows(...args: string[]): Promise<TableRow[]> {
    const r = await this.getPods(...args);
    if (r.code !== 0) throw new Error(`nodelet get pods failed (${r.code}): ${r.stderr}`);
    return parseTable(r.stdout);
  }

  /** SIGTERM, then SIGKILL after `graceMs`; resolves with how the process ended. */
  async stop(graceMs = 10_000): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    const child = this.child!;
    if (child.exitCode === null && child.signalCode === null) process.kill(child.pid!, 'SIGTERM');
    const timer = setTimeout(() => {
      if (child.exitCode === null && child.signalCode === null) process.kill(child.pid!, 'SIGKILL');
    }, graceMs);
    try {
      return await this.exit!;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Teardown: stop the child if it still runs, remove the directory. */
  async kill(): Promise<void> {
    if (this.child) await this.stop(5_000);
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** A one-container pod manifest. */
export function podManifest(name: string, image: string, annotations: Record<string, string> = {}): string {
  const ann = Object.entries(annotations);
  return [
    'apiVersion: v1',
    'kind: Pod',
    'metadata:',
    `  name: ${name}`,
    ...(ann.length ? ['  annotations:', ...ann.map(([k, v]) => `    ${k}: ${JSON.stringify(v)}`)] : []),
    'spec:',
    '  containers:',
    `  - name: ${name}`,
    `    image: ${image}`,
    '',
  ].join('\n');
}
