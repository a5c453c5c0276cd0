import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createLogger, EventBus, MemorySink, type NodeletEvent, VirtualClock } from '@nodelet/kernel';

/** Test scaffolding for the pod sources: a virtual clock, a logger that records, a bus that records. */
export function testEnv() {
  const clock = new VirtualClock();
  const sink = new MemorySink();
  const logger = createLogger({ component: 'test', sink: sink.sink, now: () => clock.now(), level: 'debug' });
  const bus = new EventBus(clock, logger);
  const events: NodeletEvent[] = [];
  bus.events$.subscribe((e) => events.push(e));
  return { clock, sink, logger, bus, events };
}

export async function tempDir(): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'nodelet-config-'));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

/**
 * Waits for `condition`, for real I/O (file reads, fs events, HTTP) to finish: each round advances the
 * virtual clock by `stepMs` (0 by default: only lets due timers fire) and yields a little real time.
 * Throws after `realMs` of real time.
 */
export async function eventually(
  condition: () => boolean,
  clock: VirtualClock,
  { stepMs = 0, realMs = 5_000 }: { stepMs?: number; realMs?: number } = {},
): Promise<void> {
  const deadline = performance.now() + realMs;
  for (;;) {
    await clock.advance(stepMs);
    if (condition()) return;
    if (performance.now() > deadline) throw new Error(`condition not met within ${realMs} ms`);
    await sleep(5);
  }
}

export const podYaml = (name: string, extra = '') => `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
spec:
  containers:
  - name: main
    image: busybox:1.36${extra}
`;
