import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestFn } from 'ava';
import { MAIN, pollUntil, type RunResult } from '../test-helpers.js';
import { mountsUnder } from './helpers.js';
import { type ChildExit, TestChild } from './test-child.js';

/**
 * `nodelet up` as a child process and the real kubectl against it: what the end-to-end tests of the
 * embedded control plane with a real runtime start, talk to and clean up.
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

/** `nodelet up --data-dir <tmp> --port 0 …`, running until `stop()`. */
export class NodeletUp {
  readonly kubeconfig: string;
  private stdoutText = '';
  private stderrText = '';
  private readonly proc: TestChild;

  private constructor(
    readonly dataDir: string,
    child: ChildProcess,
  ) {
    this.kubeconfig = join(dataDir, 'kubeconfig');
    child.stdout!.setEncoding('utf8');
    child.stderr!.setEncoding('utf8');
    child.stdout!.on('data', (d: string) => (this.stdoutText += d));
    child.stderr!.on('data', (d: string) => (this.stderrText += d));
    this.proc = new TestChild(child);
  }

  /** Starts it on a new temporary data directory and waits (bounded) until it prints its kubectl line. */
  static async start(args: string[]): Promise<NodeletUp> {
    const dataDir = mkdtempSync(join(tmpdir(), 'nodelet-e2e-up-'));
    // No proxy unless a test asks for one: it would program the host's iptables.
    const proxy = args.includes('--proxy-mode') ? [] : ['--proxy-mode', 'none'];
    const child = spawn(
      process.execPath,
      [MAIN, 'up', '--data-dir', dataDir, '--port', '0', ...proxy, ...args],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    const up = new NodeletUp(dataDir, child);
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

  /** kubectl with this cluster's admin kubeconfig (and a cache directory of its own). */
  kubectl(args: string[], input?: string): Promise<RunResult> {
    return new Promise((resolve) => {
      const child = execFile(
        kubectlPath,
        ['--kubeconfig', this.kubeconfig, '--cache-dir', join(this.dataDir, 'kubectl-cache'), ...args],
        { timeout: 60_000, encoding: 'utf8', env: { ...process.env, KUBECONFIG: '' } },
        (err, stdout, stderr) =>
          resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      );
      if (input !== undefined) child.stdin?.end(input);
    });
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
