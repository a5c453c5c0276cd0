import type { Container, Pod } from '@nodelet/api';
import { hashContainer } from './container-hash.js';
import type { ContainerToKill, PodActions } from './pod-actions.js';
import { latestContainer, type RuntimePodStatus } from './runtime-pod.js';

/**
 * Init containers of a pod with sidecars (upstream SidecarContainers: an init container with
 * `restartPolicy: Always`), as upstream computeInitContainerActions decides them:
 *
 *   init[0] ─► init[1] ─► … ─► app containers
 *   a regular init container must exit 0 before the next one starts; a sidecar must be running (and its
 *   startup probe have succeeded, if it has one) — it then keeps running: restarted whenever it exits
 *   (with CrashLoopBackOff), killed and restarted on a failed liveness/startup probe or a changed spec.
 *
 * The init containers are walked from the last one back, since completed ones may have been removed
 * from the runtime: the newest one found decides what starts next.
 */

export function isSidecar(container: Container): boolean {
  return container.restartPolicy === 'Always';
}

export function hasSidecars(pod: Pod): boolean {
  return (pod.spec?.initContainers ?? []).some(isSidecar);
}

/** Probe verdicts the sidecar decisions need. */
export interface SidecarProbes {
  livenessFailed(containerId: string): boolean;
  startupFailed(containerId: string): boolean;
  /** Whether the startup probe succeeded (true for a container without one). */
  started?(containerId: string, container: Container): boolean;
}

/**
 * Fills `actions.initContainersToStart` (in spec order) and the kills of sidecars; returns whether the
 * pod is initialized, so that its app containers are looked at. Sets `killPod` when a regular init
 * container failed under `restartPolicy: Never`.
 */
export function computeInitContainerActions(
  pod: Pod,
  status: RuntimePodStatus,
  probes: SidecarProbes,
  actions: PodActions,
): boolean {
  const inits = pod.spec?.initContainers ?? [];
  const toStart: number[] = [];
  // An app container created or running: every init container ran once, even if removed since.
  let initialized = (pod.spec?.containers ?? []).some((c) => {
    const s = latestContainer(status, c.name);
    return s?.state === 'created' || s?.state === 'running';
  });
  let previouslyInitialized = initialized;
  const restartOnFailure = (pod.spec?.restartPolicy ?? 'Always') !== 'Never';
  const kill = (index: number, k: Omit<ContainerToKill, 'container'>) => {
    const s = latestContainer(status, inits[index]!.name)!;
    actions.containersToKill.push({ container: s, ...k });
    toStart.push(index);
  };

  for (let i = inits.length - 1; i >= 0; i--) {
    const container = inits[i]!;
    const sidecar = isSidecar(container);
    const s = latestContainer(status, container.name);
    if (!s) {
      if (previouslyInitialized && sidecar) toStart.push(i);
      continue;
    }
    if (previouslyInitialized && !sidecar) continue; // done long ago
    const startNext = () => {
      if (i === inits.length - 1) initialized = true;
      else if (!previouslyInitialized) toStart.push(i + 1);
    };
    switch (s.state) {
      case 'created':
        toStart.push(i); // the start failed after the create: start it again
        break;
      case 'running': {
        if (!sidecar) break; // wait for it to finish
        if (container.startupProbe) {
          if (probes.startupFailed(s.id)) {
            kill(i, {
              reason: 'StartupProbe',
              message: `Init container ${container.name} failed startup probe`,
            });
            break;
          }
          if (!(probes.started?.(s.id, container) ?? true)) break; // wait for the startup probe
        }
        startNext();
        if (s.hash && s.hash !== hashContainer(container)) {
          kill(i, { reason: 'SpecChanged', message: `Init container ${container.name} definition changed` });
        } else if (container.livenessProbe && probes.livenessFailed(s.id)) {
          kill(i, {
            reason: 'LivenessProbe',
            message: `Init container ${container.name} failed liveness probe`,
          });
        }
        break;
      }
      case 'exited':
        if (sidecar) {
          toStart.push(i);
        } else if (s.exitCode !== 0) {
          if (!restartOnFailure) {
            actions.killPod = true;
            actions.initContainersToStart = [];
            return false;
          }
          toStart.push(i);
        } else {
          startNext();
        }
        break;
      default: // unknown: kill before starting again
        if (!sidecar && !restartOnFailure) {
          actions.killPod = true;
          actions.initContainersToStart = [];
          return false;
        }
        kill(i, {
          reason: 'Unknown',
          message: `Init container is in "${s.state}" state, try killing it before restart`,
        });
    }
    previouslyInitialized = true;
  }
  if (!previouslyInitialized) toStart.push(0); // nothing ran yet
  actions.initContainersToStart = toStart.reverse().map((i) => inits[i]!);
  return initialized;
}
