import type { Pod, PodStatus } from '@nodelet/api';
import type { EventBus } from '@nodelet/kernel';

/**
 * The status manager: the latest API status of every pod the kubelet runs. It emits
 * `[Status] Pod Status Changed` only when a status really changed (timestamps of unchanged conditions
 * are kept stable by the generator, so a deep compare is enough). With an API server (a later issue) it
 * also patches `pods/status`.
 */
export class StatusManager {
  private readonly statuses = new Map<string, { status: PodStatus; text: string }>();

  constructor(private readonly bus: EventBus) {}

  get(uid: string): PodStatus | undefined {
    return this.statuses.get(uid)?.status;
  }

  set(pod: Pod, status: PodStatus): boolean {
    const uid = pod.metadata!.uid!;
    const text = JSON.stringify(status);
    if (this.statuses.get(uid)?.text === text) return false;
    this.statuses.set(uid, { status, text });
    this.bus.emit('[Status] Pod Status Changed', {
      podUid: uid,
      podName: pod.metadata!.name!,
      namespace: pod.metadata!.namespace ?? 'default',
      status,
    });
    return true;
  }

  delete(uid: string): void {
    this.statuses.delete(uid);
  }
}
