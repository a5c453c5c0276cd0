import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { systemEnv } from '@nodelet/proxy';
import { pollUntil } from '../test-helpers.js';
import { kubectlPath, type NodeletUp } from './nodelet-up.js';

/**
 * The long-running kubectl commands of the streaming tests (`port-forward`, `attach`, `logs -f`) as child
 * processes: their output is collected, and they are stopped by their PID.
 */
export class KubectlStream {
  stdout = '';
  stderr = '';
  private readonly child: ChildProcess;
  private exitCode: number | null | undefined;

  constructor(up: NodeletUp, args: string[]) {
    this.child = spawn(
      kubectlPath,
      ['--kubeconfig', up.kubeconfig, '--cache-dir', join(up.dataDir, 'kubectl-cache'), ...args],
      { stdio: ['pipe', 'pipe', 'pipe'], env: systemEnv() },
    );
    this.child.stdout!.setEncoding('utf8').on('data', (d: string) => (this.stdout += d));
    this.child.stderr!.setEncoding('utf8').on('data', (d: string) => (this.stderr += d));
    this.child.on('exit', (code) => (this.exitCode = code));
  }

  /** Waits (bounded) until stdout matches `re`; returns the match. */
  until(re: RegExp, what: string, timeoutMs = 30_000): Promise<RegExpExecArray> {
    return pollUntil(
      what,
      async () => {
        const m = re.exec(this.stdout);
        if (m) return m;
        if (this.exitCode !== undefined) throw new Error(`kubectl exited (${this.exitCode}): ${this.stderr}`);
        return undefined;
      },
      { timeoutMs, intervalMs: 50, describe: () => `stdout: ${this.stdout}\nstderr: ${this.stderr}` },
    );
  }

  write(text: string): void {
    this.child.stdin!.write(text);
  }

  /** Stops it (SIGTERM to its PID) and waits for it to exit. */
  async stop(): Promise<void> {
    if (this.exitCode !== undefined) return;
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    this.child.kill('SIGTERM');
    await exited;
  }
}
