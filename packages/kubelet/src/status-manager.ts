import type { Pod, PodStatus } from '@nodelet/api';
import type { EventBus, Logger } from '@nodelet/kernel';

/**
 * The status manager: the latest API status of every pod the kubelet runs. It emits
 * `[Status] Pod Status Changed` only when a status really changed (timestamps of unchanged conditions
 * are kept stable by the generator, so a deep compare is enough), and logs it at debug level (upstream
 * logs each status update at --v=3): the moment a status changes, for whoever follows the log.
 */
export class StatusManager {
  private readonly statuses = new Map<string, { status: PodStatus; text: string }>();

  constructor(
    private readonly bus: EventBus,
    private readonly logger?: Logger,
  ) {}

  get(uid: string): PodStatus | undefined {
    return this.statuses.get(uid)?.status;
  }

  set(pod: Pod, status: PodStatus): boolean {
    const uid = pod.metadata!.uid!;
    const text = JSON.stringify(status);
    if (this.statuses.get(uid)?.text === text) return false;
    this.statuses.set(uid, { status, text });
    const containers = status.containerStatuses ?? [];
    this.logger?.debug('Pod status updated', {
      pod: `${pod.metadata!.namespace ?? 'default'}/${pod.metadata!.name}`,
      podUID: uid,
      phase: status.phase,
      running: `${containers.filter((c) => c.state?.running).length}/${containers.length}`,
    });
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
