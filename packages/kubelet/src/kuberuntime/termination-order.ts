import type { Pod } from '@nodelet/api';
import type { Clock } from '@nodelet/kernel';
import type { RuntimeContainer } from '../runtime-pod.js';
import { isSidecar } from '../sidecar-actions.js';

/**
 * Waits for a container's turn to stop, given the grace period it has left (seconds); resolves with the
 * whole seconds it waited, which the caller takes from that grace period.
 */
export type WaitTurn = (graceSeconds: number) => Promise<number>;

/**
 * The order a pod's containers stop in (upstream kuberuntime_termination_order.go): app containers (and
 * regular init containers) at once; each sidecar only once every app container and every later
 * sidecar has exited — so sidecars stop after the app, in reverse order. As upstream, a sidecar's
 * preStop hook runs first, then it waits for its turn — never past the grace period it has left — and
 * StopContainer gets what remains (at least the minimum: the caller's `kill` sees to that).
 *
 *   app, app … ──exited──► sidecar[n-1] ──exited──► sidecar[n-2] … ──► sidecar[0]
 */
export async function killInTerminationOrder(
  pod: Pod,
  running: readonly RuntimeContainer[],
  clock: Clock,
  kill: (container: RuntimeContainer, waitTurn: WaitTurn | undefined) => Promise<void>,
): Promise<void> {
  const sidecarNames = (pod.spec?.initContainers ?? []).filter(isSidecar).map((c) => c.name);
  const sidecars = new Set(sidecarNames);
  const others = running.filter((c) => !sidecars.has(c.name));
  const ordered = sidecarNames
    .reverse()
    .map((name) => running.find((c) => c.name === name))
    .filter((c): c is RuntimeContainer => c !== undefined);
  let before: Promise<unknown> = Promise.all(others.map((c) => kill(c, undefined)));
  const all: Promise<unknown>[] = [before];
  for (const sidecar of ordered) {
    const prior = before;
    const waitTurn: WaitTurn = async (graceSeconds) => {
      const began = clock.now();
      await waitUntil(prior, began + graceSeconds * 1000, clock);
      // Whole seconds waited, as upstream (its grace period is in seconds).
      return Math.floor((clock.now() - began) / 1000);
    };
    const stopped = kill(sidecar, waitTurn);
    all.push(stopped);
    before = stopped;
  }
  await Promise.all(all);
}

/** Resolves when `prior` settles or the clock reaches `deadline`, whichever comes first. */
async function waitUntil(prior: Promise<unknown>, deadline: number, clock: Clock): Promise<void> {
  let cancel: (() => void) | undefined;
  const timeout = new Promise<void>((resolve) => {
    cancel = clock.setTimeout(resolve, Math.max(0, deadline - clock.now()));
  });
  try {
    await Promise.race([prior.then(noop, noop), timeout]);
  } finally {
    cancel?.();
  }
}

const noop = () => undefined;
