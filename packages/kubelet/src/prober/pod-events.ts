import type { Pod } from '@nodelet/api';
import { rfc3339 } from '../pod-status.js';

/**
 * The last events of each pod, as the kubelet would have recorded them with an API server: probe
 * failures (`Warning Unhealthy Liveness probe failed: …`), probe warnings, and the kills they caused
 * (`Normal Killing Container web failed liveness probe, will be restarted`). A repeat of the newest
 * identical event (same type, reason, container and message) is counted, as the API server's event
 * aggregation counts it (`x3 over 20s`); only the newest `limit` distinct events per pod are kept.
 *
 * The read-only server serves them as a v1 `EventList` at `/pods/<namespace>/<name>/events`; `nodelet
 * describe pod` prints them.
 */
export type PodEventType = 'Normal' | 'Warning';

export interface PodEventInput {
  type: PodEventType;
  reason: string;
  message: string;
  /** The container the event is about, if any (`involvedObject.fieldPath: spec.containers{web}`). */
  container?: string;
}

export interface PodEventRecord extends PodEventInput {
  count: number;
  /** ms since the epoch */
  firstTimestamp: number;
  lastTimestamp: number;
}

export class PodEventLog {
  private readonly byPod = new Map<string, PodEventRecord[]>();

  constructor(private readonly limit = 20) {}

  record(podUid: string, event: PodEventInput, now: number): PodEventRecord {
    let list = this.byPod.get(podUid);
    if (!list) this.byPod.set(podUid, (list = []));
    const i = list.findIndex(
      (e) =>
        e.type === event.type &&
        e.reason === event.reason &&
        e.message === event.message &&
        e.container === event.container,
    );
    if (i >= 0) {
      const [same] = list.splice(i, 1);
      same!.count++;
      same!.lastTimestamp = now;
      list.push(same!);
      return same!;
    }
    const created: PodEventRecord = { ...event, count: 1, firstTimestamp: now, lastTimestamp: now };
    list.push(created);
    if (list.length > this.limit) list.splice(0, list.length - this.limit);
    return created;
  }

  /** Oldest first. */
  list(podUid: string): readonly PodEventRecord[] {
    return this.byPod.get(podUid) ?? [];
  }

  delete(podUid: string): void {
    this.byPod.delete(podUid);
  }
}

/** The events of `pod` as a v1 EventList, the shape `kubectl get events -o json` prints. */
export function eventList(pod: Pod, records: readonly PodEventRecord[], nodeName: string): object {
  const meta = pod.metadata ?? {};
  const namespace = meta.namespace ?? 'default';
  return {
    kind: 'EventList',
    apiVersion: 'v1',
    metadata: {},
    items: records.map((e, i) => ({
      kind: 'Event',
      apiVersion: 'v1',
      metadata: {
        name: `${meta.name}.${(e.firstTimestamp * 1000 + i).toString(16)}`,
        namespace,
        creationTimestamp: rfc3339(e.firstTimestamp),
      },
      involvedObject: {
        kind: 'Pod',
        namespace,
        name: meta.name,
        uid: meta.uid,
        apiVersion: 'v1',
        ...(e.container ? { fieldPath: `spec.containers{${e.container}}` } : {}),
      },
      reason: e.reason,
      message: e.message,
      source: { component: 'kubelet', host: nodeName },
      firstTimestamp: rfc3339(e.firstTimestamp),
      lastTimestamp: rfc3339(e.lastTimestamp),
      count: e.count,
      type: e.type,
      eventTime: null,
      reportingComponent: 'kubelet',
      reportingInstance: nodeName,
    })),
  };
}
