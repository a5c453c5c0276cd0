import { Writable } from 'node:stream';
import type { Implementation, TestFn } from 'ava';
import { createLogger } from '@nodelet/kernel';
import { ChangeTracker } from '../change-tracker.js';
import type { CommandRunner, ExecOptions, ExecResult, RunningCommand } from '../exec.js';
import { defaultNodeContext, type NodeContext } from '../state.js';
import { isStandbyShell } from '../standby.js';
import { CONFORMANCE_NODE, conformanceServices, conformanceSlices } from './fixtures.js';
import { commandExists, netnsSupport } from './netns.js';

/**
 * The rule for tests that need the real kernel (root, `ip netns`, the backend's tools) when it is not
 * there: under CI=true one test that fails and says why; elsewhere one skipped test whose title says
 * what is skipped and why (a file must declare a test, or ava reports "No tests found").
 */
export function declareUnavailable<C>(test: TestFn<C>, what: string, reason: string): void {
  if (process.env.CI === 'true') {
    test(`${what}: need root and network namespaces`, (t) =>
      t.fail(`CI=true, but ${what} cannot run here: ${reason}`));
  } else {
    test.skip(`${what}: skipped, ${reason}`, () => undefined);
  }
}

/** The Debian package that installs a kernel tool the tests use. */
function packageOf(tool: string): string {
  if (tool.startsWith('iptables')) return 'iptables';
  if (tool === 'nft') return 'nftables';
  if (tool === 'ip') return 'iproute2';
  return tool;
}

/** Why kernel tests cannot run here (no root, no `ip netns`, a tool missing); undefined when they can. */
export async function kernelUnavailable(tools: readonly string[] = []): Promise<string | undefined> {
  const support = await netnsSupport();
  if (!support.ok) return support.reason!;
  for (const tool of tools)
    if (!(await commandExists(tool))) return `${tool} is not installed (apt-get install ${packageOf(tool)})`;
  return undefined;
}

/**
 * How a test file declares kernel tests: call it with top-level await before declaring any test. Where
 * the kernel tests can run, it returns `test.serial` (they share the machine's netfilter modules and
 * CPU); otherwise it applies `declareUnavailable` and returns a declarer that declares nothing.
 */
export async function kernelTests<C>(
  test: TestFn<C>,
  what: string,
  tools: readonly string[] = [],
): Promise<(title: string, implementation: Implementation<[], C>) => void> {
  const reason = await kernelUnavailable(tools);
  if (!reason) return (title, implementation) => test.serial(title, implementation);
  declareUnavailable(test, what, reason);
  return () => undefined;
}

/** A change tracker holding the conformance Services and EndpointSlices. */
export function conformanceTracker(node: NodeContext = defaultNodeContext(CONFORMANCE_NODE)): ChangeTracker {
  const tracker = new ChangeTracker(node, createLogger({ sink: () => undefined }));
  for (const s of conformanceServices()) tracker.upsertService(s);
  for (const s of conformanceSlices()) tracker.upsertEndpointSlice(s);
  return tracker;
}

/**
 * A change tracker holding `services` ClusterIP services (namespace `ns`, port 80, 10.96.x.y) with
 * `endpoints` ready endpoints each (port 8080): the shape the bench measures, small enough for a test
 * whose rules must span several pieces of a streamed transaction.
 */
export function bulkTracker(
  services: number,
  endpoints = 10,
  node: NodeContext = defaultNodeContext('node-a'),
): ChangeTracker {
  const tracker = new ChangeTracker(node, createLogger({ sink: () => undefined }));
  for (let i = 0; i < services; i++) {
    tracker.upsertService({
      kind: 'Service',
      metadata: { name: `svc-${i}`, namespace: 'ns' },
      spec: { clusterIP: `10.96.${i >> 8}.${i & 255}`, ports: [{ name: 'http', port: 80 }] },
    });
    tracker.upsertEndpointSlice({
      kind: 'EndpointSlice',
      metadata: { name: `svc-${i}-1`, namespace: 'ns', labels: { 'kubernetes.io/service-name': `svc-${i}` } },
      addressType: 'IPv4',
      endpoints: Array.from({ length: endpoints }, (_, j) => ({
        addresses: [`10.1.${i >> 4}.${((i & 15) << 4) + j}`],
      })),
      ports: [{ name: 'http', port: 8080 }],
    });
  }
  return tracker;
}

export interface FaultyRunnerOptions {
  /** Which commands are the backend's transactions (`iptables-restore`, `nft -f`). */
  isTransaction: (command: string, args: readonly string[]) => boolean;
  /** Turns a transaction's input into one the kernel refuses. */
  corrupt: (input: string) => string;
}

/**
 * Runs commands through `inner`, records every transaction's input, and corrupts the next transaction
 * after `failNext = true` — to test that a refused transaction leaves the previous rules in force.
 * Streams (`start`) when `inner` does, holding the input until it is complete, so streaming backends
 * keep their streaming path under test.
 */
export class FaultyRunner implements CommandRunner {
  failNext = false;
  readonly transactions: string[] = [];
  readonly start?: CommandRunner['start'];

  constructor(
    private readonly inner: CommandRunner,
    private readonly options: FaultyRunnerOptions,
  ) {
    if (inner.start) this.start = (command, args, opts) => this.startHeld(command, args, opts);
  }

  run(command: string, args: readonly string[], options: ExecOptions = {}): Promise<ExecResult> {
    if (options.input === undefined || !this.options.isTransaction(command, args)) {
      return this.inner.run(command, args, options);
    }
    return this.inner.run(command, args, { ...options, input: this.transaction(options.input) });
  }

  private transaction(input: string): string {
    this.transactions.push(input);
    if (!this.failNext) return input;
    this.failNext = false;
    return this.options.corrupt(input);
  }

  private startHeld(
    command: string,
    args: readonly string[],
    options?: Omit<ExecOptions, 'input'>,
  ): RunningCommand {
    if (!this.options.isTransaction(command, args)) return this.inner.start!(command, args, options);
    // The command starts at once (its output may be needed before its input is complete); its input
    // is held and written, possibly corrupted, once complete. A standby shell's first line (which
    // script to run) goes through at once.
    const running = this.inner.start!(command, args, options);
    const chunks: Buffer[] = [];
    let killed = false;
    let scriptNamed = !isStandbyShell(command, args);
    const stdin = new Writable({
      write(chunk: Buffer, _encoding, done) {
        if (!scriptNamed) {
          const eol = chunk.indexOf(10);
          if (eol >= 0) {
            scriptNamed = true;
            running.stdin.write(chunk.subarray(0, eol + 1));
            chunk = chunk.subarray(eol + 1);
          }
        }
        chunks.push(Buffer.from(chunk));
        done();
      },
      final: (done) => {
        if (!killed) running.stdin.end(this.transaction(Buffer.concat(chunks).toString('utf8')));
        done();
      },
    });
    return {
      stdin,
      stdout: running.stdout,
      result: running.result,
      kill: () => {
        killed = true;
        running.kill();
      },
    };
  }
}
