import type { Pod } from '@nodelet/api';
import type { Clock } from '@nodelet/kernel';
import type { RuntimeContainer } from '../runtime-pod.js';
import { isSidecar } from '../sidecar-actions.js';

/**
 * The order a pod's containers stop in (upstream kuberuntime_termination_order.go): app containers (and
 * regular init containers) at once; each sidecar only once every app container and every later
 * sidecar has exited — so sidecars stop after the app, in reverse order — but never waiting past the
 * grace period (an override's, when given). A sidecar that waited gets the grace left, at least the
 * minimum. (Upstream runs a sidecar's preStop hook before this wait; here the wait comes first.)
 *
 *   app, app … ──exited──► sidecar[n-1] ──exited──► sidecar[n-2] … ──► sidecar[0]
 */
export async function killInTerminationOrder(
  pod: Pod,
  running: readonly RuntimeContainer[],
  options: { clock: Clock; graceSeconds: number; minGraceSeconds: number },
  kill: (container: RuntimeContainer, graceOverride: number | undefined) => Promise<void>,
): Promise<void> {
  const sidecarNames = (pod.spec?.initContainers ?? []).filter(isSidecar).map((c) => c.name);
  const sidecars = new Set(sidecarNames);
  const others = running.filter((c) => !sidecars.has(c.name));
  const ordered = sidecarNames
    .reverse()
    .map((name) => running.find((c) => c.name === name))
    .filter((c): c is RuntimeContainer => c !== undefined);
  const { clock, graceSeconds, minGraceSeconds } = options;
  const start = clock.now();
  const deadline = start + graceSeconds * 1000;
  let before: Promise<unknown> = Promise.all(others.map((c) => kill(c, undefined)));
  const all: Promise<unknown>[] = [before];
  for (const sidecar of ordered) {
    const prior = before;
    const stopped = (async () => {
      await waitUntil(prior, deadline, clock);
      // Whole seconds waited, as upstream (its grace period is in seconds).
      const waited = Math.floor((clock.now() - start) / 1000);
      await kill(sidecar, waited > 0 ? Math.max(graceSeconds - waited, minGraceSeconds) : undefined);
    })();
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
