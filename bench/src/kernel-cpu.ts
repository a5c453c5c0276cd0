/**
 * Where the proxy bench runs what it compares. The vCPUs of a virtual machine need not run at the same
 * speed, and on the machine these figures come from which one is faster changes from minute to minute
 * (the same spin loop pinned to each: 446 vs 366 ms, ten minutes later 447 vs 605 ms; an
 * iptables-legacy-restore of 1,000 services 461–497 ms on one, 325–382 ms on the other). A floor timed
 * on one CPU and nodelet's apply on the other then differ by a third for no reason of theirs.
 *
 * So every kernel-side command of a comparison — the floor's, the hand-made transaction, the commands
 * nodelet's syncs start — runs on one CPU (`taskset -c K`), and the bench process, where nodelet
 * renders while the kernel tool parses, on the others, as on a node with more than one CPU. A render
 * timed on its own for (a) runs on K, like the apply it is divided by (its main thread: V8's helper
 * threads, concurrent marking and compilation, stay beside it, where they would run on any node).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { cpus } from 'node:os';

export class CpuPlacement {
  private readonly others: string;

  /** `kernelCpu` undefined: no placement (one CPU, or `--kernel-cpu off`). */
  constructor(readonly kernelCpu: number | undefined) {
    const all = cpus().map((_, i) => i);
    if (kernelCpu !== undefined && !all.includes(kernelCpu)) {
      throw new Error(`--kernel-cpu ${kernelCpu}: this machine has CPUs 0–${all.length - 1}`);
    }
    this.others = all.filter((i) => i !== kernelCpu).join(',');
  }

  /** `--kernel-cpu`: a CPU number, `off`, or unset (the last CPU when there are two or more). */
  static fromFlag(flag: string | undefined): CpuPlacement {
    if (flag === 'off') return new CpuPlacement(undefined);
    if (flag === undefined) return new CpuPlacement(cpus().length > 1 ? cpus().length - 1 : undefined);
    const n = Number(flag);
    if (!Number.isInteger(n)) throw new Error(`--kernel-cpu must be a CPU number or off, not ${flag}`);
    return new CpuPlacement(n);
  }

  /** `command args` run on the kernel CPU. */
  command(command: string, args: readonly string[]): [string, string[]] {
    return this.kernelCpu === undefined
      ? [command, [...args]]
      : ['taskset', ['-c', String(this.kernelCpu), command, ...args]];
  }

  /** Moves this process's main thread onto the kernel CPU (to time a render as the apply is timed). */
  benchOnKernelCpu(): void {
    if (this.kernelCpu === undefined) return;
    execFileSync('taskset', ['-p', '-c', String(this.kernelCpu), String(process.pid)], { stdio: 'ignore' });
  }

  /** Moves every thread of this process off the kernel CPU. */
  benchBesideKernel(): void {
    if (this.kernelCpu !== undefined) this.pinSelf(this.others);
  }

  /** Lets this process run anywhere again. */
  release(): void {
    if (this.kernelCpu !== undefined)
      this.pinSelf(
        cpus()
          .map((_, i) => i)
          .join(','),
      );
  }

  private pinSelf(list: string): void {
    execFileSync('taskset', ['-a', '-p', '-c', list, String(process.pid)], { stdio: 'ignore' });
  }
}

/** Milliseconds one spin loop takes pinned to each CPU (the speeds the placement works around). */
export function cpuSpeeds(): number[] {
  const spin =
    'const t=process.hrtime.bigint();let x=0;for(let i=0;i<1e8;i++)x+=i%7;console.log(Number(process.hrtime.bigint()-t)/1e6)';
  return cpus().map((_, i) => {
    const r = spawnSync('taskset', ['-c', String(i), process.execPath, '-e', spin], { encoding: 'utf8' });
    return Math.round(Number(r.stdout.trim()));
  });
}
