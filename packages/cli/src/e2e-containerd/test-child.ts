import type { ChildProcess } from 'node:child_process';

export interface ChildExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/**
 * A long-running child process a test started (a kubelet, a cluster): how it ended, a graceful stop, and
 * a guard that sends it SIGTERM if the test process goes first (ava's timeout), so it never outlives it.
 */
export class TestChild {
  readonly exit: Promise<ChildExit>;
  private done = false;

  constructor(readonly child: ChildProcess) {
    this.exit = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    const orphan = () => child.kill('SIGTERM');
    process.once('exit', orphan);
    void this.exit.then(() => {
      this.done = true;
      process.off('exit', orphan);
    });
  }

  get exited(): boolean {
    return this.done;
  }

  /** SIGTERM, SIGKILL after `graceMs`; resolves with how it ended. */
  async stop(graceMs: number): Promise<ChildExit> {
    if (!this.done) this.child.kill('SIGTERM');
    const timer = setTimeout(() => {
      if (!this.done) this.child.kill('SIGKILL');
    }, graceMs);
    try {
      return await this.exit;
    } finally {
      clearTimeout(timer);
    }
  }
}
