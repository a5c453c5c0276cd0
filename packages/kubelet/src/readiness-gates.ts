import type { Pod, PodCondition } from '@nodelet/api';

/**
 * Pod readiness gates (upstream status.GeneratePodReadyCondition): the pod is Ready only when its
 * containers are and every condition named in `spec.readinessGates` is True in its status. Those
 * conditions are written by others (controllers, through the status subresource); the kubelet keeps
 * every condition it does not own.
 */

/** The pod conditions the kubelet owns (upstream kubetypes.PodConditionsByKubelet). */
export const KUBELET_CONDITIONS: ReadonlySet<string> = new Set([
  'PodScheduled',
  'PodReadyToStartContainers',
  'Initialized',
  'Ready',
  'ContainersReady',
]);

/** The conditions of the pod's status that others own, kept as they are. */
export function foreignConditions(pod: Pod): PodCondition[] {
  return (pod.status?.conditions ?? []).filter((c) => !KUBELET_CONDITIONS.has(c.type));
}

/** Why the readiness gates keep the pod from being Ready, as upstream's messages; '' when they do not. */
export function unreadyGatesMessage(pod: Pod, conditions: readonly PodCondition[]): string {
  const messages: string[] = [];
  for (const gate of pod.spec?.readinessGates ?? []) {
    const c = conditions.find((x) => x.type === gate.conditionType);
    if (!c) {
      messages.push(`corresponding condition of pod readiness gate "${gate.conditionType}" does not exist.`);
    } else if (c.status !== 'True') {
      messages.push(
        `the status of pod readiness gate "${gate.conditionType}" is not "True", but ${c.status}`,
      );
    }
  }
  return messages.join(', ');
}

/**
 * What of a pod's status the kubelet must react to although its spec did not change: the conditions of
 * its readiness gates (upstream syncs the pod when they change, NeedToReconcilePodReadiness).
 */
export function readinessGateView(pod: Pod): PodCondition[] | undefined {
  const gates = pod.spec?.readinessGates;
  if (!gates?.length) return undefined;
  const types = new Set(gates.map((g) => g.conditionType));
  return (pod.status?.conditions ?? [])
    .filter((c) => types.has(c.type))
    .map((c) => ({ type: c.type, status: c.status }));
}
