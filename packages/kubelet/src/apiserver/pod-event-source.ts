import type { ContainerStatus, Pod, PodStatus } from '@nodelet/api';
import type { EventBus, EventCatalogue } from '@nodelet/kernel';
import type { Subscription } from 'rxjs';

type PodEvent = EventCatalogue['[Kubelet] Pod Event'];

/**
 * Turns what the kubelet already reports into `[Kubelet] Pod Event` facts with upstream's reasons and
 * messages, so an API server connection can record them as Events (`kubectl describe pod`). The image
 * puller publishes its own Pulling and Pulled events; the rest are derived here:
 *
 * | seen                                              | event                                         |
 * | ------------------------------------------------- | --------------------------------------------- |
 * | a container with a new container ID in the status | Normal Pulled `… already present on machine`  |
 * |                                                   | (unless the puller pulled it), Normal Created,|
 * |                                                   | Normal Started                                |
 * | waiting ErrImagePull / ImagePullBackOff           | Warning Failed …; Normal BackOff …            |
 * | waiting CrashLoopBackOff                          | Warning BackOff `Back-off restarting failed…` |
 * | waiting Create…Error / RunContainerError          | Warning Failed `Error: …`                     |
 * | waiting ContainerCreating with a sandbox error    | Warning FailedCreatePodSandBox                |
 * | probe result failure                              | Warning Unhealthy `<Probe> probe failed: …`   |
 * | liveness/startup failure past its threshold       | Normal Killing `Container … will be restarted`|
 * | pod removed or deleted                            | Normal Killing `Stopping container <name>`    |
 */
export class PodEventSource {
  private readonly last = new Map<string, PodStatus>();
  private readonly pulls = new Map<string, Set<string>>();
  private readonly killed = new Set<string>();
  private readonly subscriptions: Subscription[] = [];

  constructor(
    private readonly bus: EventBus,
    /** The kubelet's pod by UID. */
    private readonly podOf: (uid: string) => Pod | undefined,
  ) {}

  start(): void {
    const bus = this.bus;
    this.subscriptions.push(
      bus.subscribe('[Status] Pod Status Changed', (e) => this.statusChanged(e.podUid, e.status)),
      bus.subscribe('[Prober] Probe Result', (e) => {
        if (e.result !== 'failure') return;
        const pod = this.podOf(e.podUid);
        if (!pod) return;
        const probe = e.probe[0]!.toUpperCase() + e.probe.slice(1);
        this.emit(pod, 'Warning', 'Unhealthy', `${probe} probe failed: ${e.message}`.trim(), e.container);
        if (e.changed && e.probe !== 'readiness') {
          this.emit(
            pod,
            'Normal',
            'Killing',
            `Container ${e.container} failed ${e.probe} probe, will be restarted`,
            e.container,
          );
        }
      }),
      bus.subscribe('[Source] Pod Removed', (e) => this.stopping(e.pod)),
      bus.subscribe('[Source] Pod Updated', (e) => {
        if (e.pod.metadata?.deletionTimestamp) this.stopping(e.pod);
      }),
      bus.subscribe('[PodWorker] Pod Terminated', (e) => this.forget(e.podUid)),
      bus.subscribe('[Kubelet] Pod Event', (e) => {
        if (e.reason === 'Pulled' && e.container) this.pulled(e.podUid, e.container);
      }),
    );
  }

  stop(): void {
    for (const s of this.subscriptions.splice(0)) s.unsubscribe();
  }

  /** Drops what is kept about a pod that is gone. */
  forget(uid: string): void {
    this.last.delete(uid);
    this.pulls.delete(uid);
    this.killed.delete(uid);
  }

  /** The image puller pulled the image of this container: its start needs no `already present`. */
  private pulled(uid: string, container: string): void {
    let set = this.pulls.get(uid);
    if (!set) this.pulls.set(uid, (set = new Set()));
    set.add(container);
  }

  private stopping(pod: Pod): void {
    const uid = pod.metadata?.uid;
    if (!uid || this.killed.has(uid)) return;
    const status = this.last.get(uid);
    if (!status) return;
    this.killed.add(uid);
    for (const c of status.containerStatuses ?? []) {
      if (c.state?.running) this.emit(pod, 'Normal', 'Killing', `Stopping container ${c.name}`, c.name);
    }
  }

  private statusChanged(uid: string, status: PodStatus): void {
    const pod = this.podOf(uid);
    const before = this.last.get(uid);
    this.last.set(uid, status);
    if (!pod) return;
    if (status.phase === 'Failed' && status.reason && !before) return; // a rejection: recorded by admission
    const previous = new Map(
      [...(before?.initContainerStatuses ?? []), ...(before?.containerStatuses ?? [])].map((c) => [
        c.name,
        c,
      ]),
    );
    for (const c of [...(status.initContainerStatuses ?? []), ...(status.containerStatuses ?? [])]) {
      this.containerChanged(pod, previous.get(c.name), c);
    }
  }

  private containerChanged(pod: Pod, before: ContainerStatus | undefined, now: ContainerStatus): void {
    const name = now.name;
    if (
      now.containerID &&
      now.containerID !== before?.containerID &&
      (now.state?.running || now.state?.terminated)
    ) {
      const image =
        pod.spec?.containers.concat(pod.spec.initContainers ?? []).find((c) => c.name === name)?.image ??
        now.image;
      if (!this.pulls.get(pod.metadata!.uid!)?.delete(name) && !before?.containerID) {
        this.emit(pod, 'Normal', 'Pulled', `Container image "${image}" already present on machine`, name);
      }
      this.emit(pod, 'Normal', 'Created', `Created container: ${name}`, name);
      this.emit(pod, 'Normal', 'Started', `Started container ${name}`, name);
    }
    const waiting = now.state?.waiting;
    if (!waiting?.reason) return;
    const same =
      before?.state?.waiting?.reason === waiting.reason && before.state.waiting.message === waiting.message;
    if (same) return;
    const message = waiting.message ?? '';
    switch (waiting.reason) {
      case 'ErrImagePull':
        this.emit(pod, 'Warning', 'Failed', message, name);
        this.emit(pod, 'Warning', 'Failed', 'Error: ErrImagePull', name);
        break;
      case 'ImagePullBackOff':
        this.emit(pod, 'Normal', 'BackOff', message || `Back-off pulling image "${now.image}"`, name);
        this.emit(pod, 'Warning', 'Failed', 'Error: ImagePullBackOff', name);
        break;
      case 'ErrImageNeverPull':
        this.emit(pod, 'Warning', 'ErrImageNeverPull', message, name);
        break;
      case 'InvalidImageName':
        this.emit(pod, 'Warning', 'InspectFailed', message, name);
        break;
      case 'CrashLoopBackOff': {
        const meta = pod.metadata!;
        this.emit(
          pod,
          'Warning',
          'BackOff',
          `Back-off restarting failed container ${name} in pod ${meta.name}_${meta.namespace ?? 'default'}(${meta.uid})`,
          name,
        );
        break;
      }
      case 'CreateContainerConfigError':
      case 'CreateContainerError':
      case 'RunContainerError':
        this.emit(pod, 'Warning', 'Failed', `Error: ${message}`, name);
        break;
      case 'ContainerCreating':
        if (!message) break;
        // One event per pod, not per container.
        if (pod.spec?.containers[0]?.name !== name) break;
        // A volume's failure is reported by the volume manager itself (FailedMount, naming the volume).
        if (message.startsWith('Failed to create pod sandbox')) {
          this.emit(pod, 'Warning', 'FailedCreatePodSandBox', message);
        }
        break;
    }
  }

  private emit(
    pod: Pod,
    type: PodEvent['eventType'],
    reason: string,
    message: string,
    container?: string,
  ): void {
    const meta = pod.metadata!;
    this.bus.emit('[Kubelet] Pod Event', {
      podUid: meta.uid!,
      podName: meta.name!,
      namespace: meta.namespace ?? 'default',
      eventType: type,
      reason,
      message,
      ...(container ? { container } : {}),
    });
  }
}
