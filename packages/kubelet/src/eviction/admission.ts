import { type Pod, toleratesTaint } from '@nodelet/api';
import type { AdmitResult } from '../admission.js';
import { isStaticPod } from '../pod-manager.js';
import { qosClass } from '../pod-status.js';
import { EVICTED_REASON } from './message.js';
import type { PressureCondition } from './signals.js';

/** The taint the node lifecycle controller puts on a node under each pressure (upstream's keys). */
export const pressureTaints: Record<PressureCondition, string> = {
  MemoryPressure: 'node.kubernetes.io/memory-pressure',
  DiskPressure: 'node.kubernetes.io/disk-pressure',
  PIDPressure: 'node.kubernetes.io/pid-pressure',
};

/** Upstream's system-critical priority (system-cluster-critical and above). */
const SYSTEM_CRITICAL_PRIORITY = 2_000_000_000;

/** Upstream IsCriticalPod: a static or mirror pod, or one of system-critical priority. */
export function isCriticalPod(pod: Pod): boolean {
  if (isStaticPod(pod)) return true;
  if (pod.metadata?.annotations?.['kubernetes.io/config.mirror'] !== undefined) return true;
  return (pod.spec?.priority ?? 0) >= SYSTEM_CRITICAL_PRIORITY;
}

/**
 * The eviction manager's admission (upstream managerImpl.Admit): with no pressure, or for a critical
 * pod, admit; under memory pressure alone, admit all but BestEffort pods and the BestEffort pods that
 * tolerate the memory-pressure taint; under any other pressure, refuse — reason `Evicted`, message
 * "The node had condition: [DiskPressure]. ".
 */
export function admitUnderPressure(pod: Pod, conditions: readonly PressureCondition[]): AdmitResult {
  if (conditions.length === 0 || isCriticalPod(pod)) return { admit: true };
  if (conditions.length === 1 && conditions[0] === 'MemoryPressure') {
    if (qosClass(pod) !== 'BestEffort') return { admit: true };
    const taint = { key: pressureTaints.MemoryPressure, effect: 'NoSchedule' };
    if ((pod.spec?.tolerations ?? []).some((t) => toleratesTaint(t, taint))) return { admit: true };
  }
  return {
    admit: false,
    reason: EVICTED_REASON,
    message: `The node had condition: [${conditions.join(' ')}]. `,
  };
}
