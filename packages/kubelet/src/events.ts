import type { Pod, PodStatus } from '@nodelet/api';

/** The pod sources of the kubelet: static-manifest directory, manifest URL, API server. */
export type PodSourceName = 'file' | 'http' | 'api';

/**
 * The kubelet's facts on the kernel's bus (see the kernel's EventCatalogue). Observers and plugins that
 * react to them import @nodelet/kubelet, which brings these declarations into their program.
 */
declare module '@nodelet/kernel' {
  interface EventCatalogue {
    // Pod sources (static-manifest directory, manifest URL, API server).
    '[Source] Pod Added': { source: PodSourceName; pod: Pod };
    '[Source] Pod Updated': { source: PodSourceName; pod: Pod };
    '[Source] Pod Removed': { source: PodSourceName; pod: Pod };
    '[Source] Manifest Rejected': { source: PodSourceName; origin: string; reason: string };

    // PLEG: what the relist saw change in the runtime.
    '[PLEG] Container Started': { podUid: string; containerId: string };
    '[PLEG] Container Died': { podUid: string; containerId: string };
    '[PLEG] Container Removed': { podUid: string; containerId: string };
    '[PLEG] Container Changed': { podUid: string; containerId: string };
    '[PLEG] Health Changed': { healthy: boolean; message: string };
    /** A relist that succeeded: when it began and how long it took (kubelet_pleg_relist_* metrics). */
    '[PLEG] Relisted': { startedAt: number; durationMs: number };

    // Prober: one event per probe run. `result` is what this run found ('unknown': the check could not be
    // made); `changed` says the kubelet's view of the probe (past its thresholds) changed with it.
    '[Prober] Probe Result': {
      podUid: string;
      container: string;
      containerId: string;
      probe: 'liveness' | 'readiness' | 'startup';
      result: 'success' | 'failure' | 'unknown';
      message: string;
      changed: boolean;
    };

    // Status manager.
    '[Status] Pod Status Changed': { podUid: string; podName: string; namespace: string; status: PodStatus };

    // What the kubelet did to a pod, with upstream's event reasons (Pulling, Pulled, Created, Started,
    // Killing, BackOff, Failed, FailedMount, Unhealthy, OutOfcpu, …): an API server connection records
    // them as Events.
    '[Kubelet] Pod Event': {
      podUid: string;
      podName: string;
      namespace: string;
      eventType: 'Normal' | 'Warning';
      reason: string;
      message: string;
      /** The container it is about, if any (`involvedObject.fieldPath: spec.containers{<name>}`). */
      container?: string;
    };

    // Pod workers.
    '[PodWorker] Pod Terminated': { podUid: string; podName: string; namespace: string };
    '[PodWorker] Sync Failed': {
      podUid: string;
      podName: string;
      namespace: string;
      reason: string;
      message: string;
    };

    // Node.
    '[Node] Condition Changed': {
      type: string;
      status: 'True' | 'False' | 'Unknown';
      reason: string;
      message: string;
    };
    '[Eviction] Eviction Started': { podUid: string; signal: string; message: string };
    /** Something about the node itself (image GC failures, …), recorded as an Event on the Node. */
    '[Kubelet] Node Event': { eventType: 'Normal' | 'Warning'; reason: string; message: string };
  }
}
