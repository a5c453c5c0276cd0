import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { accessSync, constants, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { systemEnv } from '@nodelet/proxy';
import type { TestFn } from 'ava';
import { MAIN, pollUntil, type RunResult } from '../test-helpers.js';
import { mountsUnder, sweepNode } from './helpers.js';
import { type ChildExit, TestChild } from './test-child.js';

/**
 * `nodelet up` as a child process and the real kubectl against it, on the host or inside a network
 * namespace the test made: what the end-to-end tests of the embedded control plane with a real runtime
 * (and of its proxy) start, talk to and clean up.
 */
export const kubectlPath = process.env.KUBECTL ?? '/usr/bin/kubectl';

/**
 * True when kubectl can be run. Without it the file's tests fail under CI=true and are skipped, with one
 * line that says why, elsewhere.
 */
export function requireKubectl<C>(test: TestFn<C>): boolean {
  try {
    accessSync(kubectlPath, constants.X_OK);
    return true;
  } catch {
    const why = `kubectl not found at ${kubectlPath} (set KUBECTL, or apt-get install kubernetes-client)`;
    if (process.env.CI === 'true') test(`kubectl is required in CI (CI=true)`, (t) => t.fail(why));
    else test.skip(`${why}; skipping the kubectl tests`, () => undefined);
    return false;
  }
}

/** Runs a command on the host, or inside network namespace `netns`; never rejects. */
export function run(
  netns: string | undefined,
  command: string,
  args: string[],
  options: { input?: string; timeoutMs?: number } = {},
): Promise<RunResult> {
  const [file, argv] = netns ? ['ip', ['netns', 'exec', netns, command, ...args]] : [command, args];
  return new Promise((resolve) => {
    const child = execFile(
      file,
      argv,
      { timeout: options.timeoutMs ?? 60_000, encoding: 'utf8', env: systemEnv(), maxBuffer: 64 << 20 },
      (err, stdout, stderr) =>
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) || 1 : 0, stdout, stderr }),
    );
    if (options.input !== undefined) child.stdin?.end(options.input);
  });
}

/** `nodelet up --data-dir <dir> --port 0 …`, on the host or in a network namespace, until `stop()`. */
export class NodeletUp {
  readonly kubeconfig: string;
  private stdoutText = '';
  private stderrText = '';
  private readonly proc: TestChild;

  private constructor(
    readonly dataDir: string,
    readonly netns: string | undefined,
    child: ChildProcess,
  ) {
    this.kubeconfig = join(dataDir, 'kubeconfig');
    child.stdout!.setEncoding('utf8');
    child.stderr!.setEncoding('utf8');
    child.stdout!.on('data', (d: string) => (this.stdoutText += d));
    child.stderr!.on('data', (d: string) => (this.stderrText += d));
    this.proc = new TestChild(child);
  }

  /** A new temporary data directory, with `config` (a NodeletConfiguration's text) in it when given. */
  static newDataDir(config?: string): { dataDir: string; configPath?: string } {
    const dataDir = mkdtempSync(join(tmpdir(), 'nodelet-e2e-up-'));
    if (config === undefined) return { dataDir };
    const configPath = join(dataDir, 'nodelet.yaml');
    writeFileSync(configPath, config);
    return { dataDir, configPath };
  }

  /**
   * Starts it (on a new temporary data directory unless one is given; inside `netns` when given) and
   * waits, bounded, until it prints its kubectl line. No proxy unless `args` choose a mode: one would
   * program the host's iptables.
   */
  static async start(args: string[], options: { dataDir?: string; netns?: string } = {}): Promise<NodeletUp> {
    const dataDir = options.dataDir ?? NodeletUp.newDataDir().dataDir;
    const proxy = args.includes('--proxy-mode') ? [] : ['--proxy-mode', 'none'];
    const argv = [MAIN, 'up', '--data-dir', dataDir, '--port', '0', ...proxy, ...args];
    const stdio: ['ignore', 'pipe', 'pipe'] = ['ignore', 'pipe', 'pipe'];
    // `ip netns exec` execs the command (no fork), so the child's PID is nodelet's.
    const child = options.netns
      ? spawn('ip', ['netns', 'exec', options.netns, process.execPath, ...argv], { stdio, env: systemEnv() })
      : spawn(process.execPath, argv, { stdio, env: systemEnv() });
    const up = new NodeletUp(dataDir, options.netns, child);
    await pollUntil(
      'nodelet up to print its kubectl line',
      async () => {
        if (up.proc.exited) throw new Error(`nodelet up exited during startup:\n${up.stderrText}`);
        return /^try: /m.test(up.stdoutText) ? true : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 50, describe: () => `${up.stdoutText}\n${up.stderrText}` },
    );
    return up;
  }

  stdout(): string {
    return this.stdoutText;
  }

  stderr(): string {
    return this.stderrText;
  }

  get exited(): boolean {
    return this.proc.exited;
  }

  /** The proxy's /healthz URL from the startup lines. */
  get healthz(): string | undefined {
    return /healthz (http:\/\/\S+)/.exec(this.stdoutText)?.[1];
  }

  /** kubectl with this cluster's admin kubeconfig (and a cache directory of its own). */
  kubectl(args: string[], input?: string): Promise<RunResult> {
    return run(
      this.netns,
      kubectlPath,
      ['--kubeconfig', this.kubeconfig, '--cache-dir', join(this.dataDir, 'kubectl-cache'), ...args],
      input === undefined ? {} : { input },
    );
  }

  /** kubectl that must succeed; returns its stdout. */
  async kubectlOk(args: string[], input?: string): Promise<string> {
    const r = await this.kubectl(args, input);
    if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr || r.stdout}`);
    return r.stdout;
  }

  async waitNodeReady(node: string): Promise<void> {
    await pollUntil(
      `node ${node} to be Ready`,
      async () => {
        const r = await this.kubectl(['get', 'node', node, '--no-headers']);
        return /\sReady\s/.test(r.stdout) ? true : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 200, describe: () => this.stderrText.slice(-3000) },
    );
  }

  /** Pod IPs of the Running pods with this label, by pod name. */
  async podIPs(selector: string): Promise<Map<string, string>> {
    const out = await this.kubectlOk([
      'get',
      'pods',
      '-l',
      selector,
      '-o',
      'jsonpath={range .items[*]}{.metadata.name}={.status.podIP}={.status.phase}{"\\n"}{end}',
    ]);
    const ips = new Map<string, string>();
    for (const line of out.split('\n')) {
      const [name, ip, phase] = line.split('=');
      if (name && ip && phase === 'Running') ips.set(name, ip);
    }
    return ips;
  }

  /** SIGTERM, SIGKILL after `graceMs`; resolves with how it ended. */
  stop(graceMs = 20_000): Promise<ChildExit> {
    return this.proc.stop(graceMs);
  }

  /**
   * Removes the data directory; a volume the kubelet mounted under it (a test stopped before its pod was
   * deleted) is unmounted first, or rm would stop at the mount point.
   */
  dispose(): void {
    for (const { point } of mountsUnder(this.dataDir + '/').sort((a, b) => b.point.length - a.point.length)) {
      try {
        execFileSync('umount', ['-l', point], { timeout: 20_000, stdio: 'ignore' });
      } catch {
        // rm below reports what could not be removed.
      }
    }
    rmSync(this.dataDir, { recursive: true, force: true });
  }
}

/**
 * `nodelet up --runtime containerd` for the tests of one file: started before them with its node named
 * `node`, stopped after them, the node's pods swept from containerd (`endpoint`) and its data removed.
 * Returns the running instance.
 */
export function containerdUpForFile(test: TestFn, endpoint: string, node: string): () => NodeletUp {
  let up: NodeletUp | undefined;
  test.before(async () => {
    up = await NodeletUp.start(['--runtime', 'containerd', '--hostname-override', node]);
    await up.waitNodeReady(node);
  });
  test.after.always(async () => {
    await up?.stop();
    await sweepNode(endpoint, node);
    up?.dispose();
  });
  return () => {
    if (!up) throw new Error('nodelet up did not start (see the before hook)');
    return up;
  };
}
