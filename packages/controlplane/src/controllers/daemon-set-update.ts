import type { KubeObject } from '../object.js';
import { isPodAvailable } from './pod-control.js';
import { revisionHashLabel } from './controller-history.js';

/**
 * One step of a DaemonSet's RollingUpdate as a pure function (upstream's pkg/controller/daemon/update.go,
 * `rollingUpdate`). Without surge, old pods are deleted while fewer than maxUnavailable nodes lack an
 * available daemon pod (an old pod that is not available is replaced at once); the manage step then
 * creates the new pod. With maxSurge, a new pod is created beside an available old one on up to maxSurge
 * nodes, and the old one is deleted once the new one is available.
 */
export interface RollingStep {
  deletePods: string[];
  createOnNodes: string[];
}

export interface RollingInput {
  /** The DaemonSet's pods that are not being deleted, by the node they are for. */
  nodeToPods: Map<string, KubeObject[]>;
  hash: string;
  maxSurge: number;
  maxUnavailable: number;
  minReadySeconds: number;
  now: number;
  shouldRun(node: string): boolean;
}

const isUpdated = (pod: KubeObject, hash: string) => pod.metadata.labels?.[revisionHashLabel] === hash;

/** findUpdatedPodsOnNode: the node's new and old pod, or undefined when it has more than one of either. */
export function podsOnNode(
  pods: KubeObject[],
  hash: string,
): { newPod?: KubeObject; oldPod?: KubeObject } | undefined {
  const out: { newPod?: KubeObject; oldPod?: KubeObject } = {};
  for (const pod of pods) {
    const slot = isUpdated(pod, hash) ? 'newPod' : 'oldPod';
    if (out[slot]) return undefined;
    out[slot] = pod;
  }
  return out;
}

export function rollingUpdateStep(input: RollingInput): RollingStep {
  return input.maxSurge === 0 ? withoutSurge(input) : withSurge(input);
}

function withoutSurge(input: RollingInput): RollingStep {
  const { hash, minReadySeconds, now, maxUnavailable } = input;
  let unavailable = 0;
  const replaceNow: string[] = [];
  const candidates: string[] = [];
  for (const [, pods] of [...input.nodeToPods].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const found = podsOnNode(pods, hash);
    if (!found || (!found.newPod && !found.oldPod) || (found.newPod && found.oldPod)) {
      // The manage step cleans this node up; until then it counts as unavailable.
      unavailable++;
    } else if (found.newPod) {
      if (!isPodAvailable(found.newPod, minReadySeconds, now)) unavailable++;
    } else if (!isPodAvailable(found.oldPod!, minReadySeconds, now)) {
      replaceNow.push(found.oldPod!.metadata.name!);
    } else if (unavailable < maxUnavailable) {
      candidates.push(found.oldPod!.metadata.name!);
    }
  }
  const room = Math.min(Math.max(0, maxUnavailable - unavailable), candidates.length);
  return { deletePods: [...replaceNow, ...candidates.slice(0, room)], createOnNodes: [] };
}

function withSurge(input: RollingInput): RollingStep {
  const { hash, minReadySeconds, now, maxSurge } = input;
  const deletePods: string[] = [];
  const createOnNodes: string[] = [];
  let surging = 0;
  for (const [node, pods] of [...input.nodeToPods].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const found = podsOnNode(pods, hash);
    if (!found) {
      surging++;
      continue;
    }
    const { newPod, oldPod } = found;
    if (!oldPod) continue;
    const shouldRun = input.shouldRun(node);
    if (!newPod) {
      if (!shouldRun) deletePods.push(oldPod.metadata.name!);
      else if (!isPodAvailable(oldPod, minReadySeconds, now)) createOnNodes.push(node);
      else if (surging < maxSurge) {
        surging++;
        createOnNodes.push(node);
      }
    } else if (!isPodAvailable(newPod, minReadySeconds, now)) surging++;
    else deletePods.push(oldPod.metadata.name!);
  }
  return { deletePods, createOnNodes };
}
