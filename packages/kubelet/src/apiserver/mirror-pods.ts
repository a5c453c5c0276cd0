import { ConfigHashAnnotation, ConfigMirrorAnnotation, ConfigSourceAnnotation, type Pod } from '@nodelet/api';
import { type Clock, errorMessage, type Logger, type Loop } from '@nodelet/kernel';
import { isAlreadyExists, isConflict, isNotFound, type KubeApi, type Node } from '@nodelet/client';
import { isMirrorPod } from './api-source.js';

export interface MirrorPodSources {
  /** The static pods the kubelet runs now (file and URL sources). */
  staticPods(): Pod[];
  /** Pods of the API on this node by `namespace/name` (mirror pods included). */
  apiPods(): ReadonlyMap<string, Pod>;
  /** True once every pod source has been read at least once (so no mirror is removed too early). */
  ready(): boolean;
}

/**
 * Mirror pods: the API server's read-only copies of static pods (upstream pod/mirror_client.go and the
 * static-pod part of syncPod and HandlePodCleanups), so `kubectl get pods` shows them. A mirror pod has
 * the static pod's name, spec and labels, the annotation `kubernetes.io/config.mirror` = the static
 * pod's hash, and the Node as its controller owner.
 *
 *   static pod, no mirror                      → create it
 *   mirror of another hash, or being deleted   → delete it (grace 0, UID precondition), then create
 *   mirror without a static pod                → delete it (the manifest was removed)
 *
 * Deleting a mirror pod never stops the static pod (the API source does not run mirror pods); the
 * mirror is simply created again. Each pass is a function of current state, run whenever the static
 * pods or the API's pods change and every 10 s, so failures are retried without a queue.
 */
export class MirrorPodManager {
  private node?: Node;
  private readonly busy = new Set<string>();
  private loop?: Loop;
  private passing?: Promise<void>;
  created = 0;
  deleted = 0;

  constructor(
    private readonly api: KubeApi,
    private readonly sources: MirrorPodSources,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly options: { nodeName: string; resyncMs?: number },
  ) {}

  setNode(node: Node): void {
    this.node = node;
    this.trigger();
  }

  start(): void {
    if (this.running) return;
    const resync = this.options.resyncMs ?? 10_000;
    this.loop = this.clock.loop(() => this.pass(), { period: resync, initialDelay: resync });
  }

  stop(): void {
    this.loop?.stop();
  }

  private get running(): boolean {
    return !!this.loop && !this.loop.stopped;
  }

  async idle(): Promise<void> {
    while (this.passing) await this.passing;
  }

  /** Something changed: run a pass soon (kicks coalesce; one during a pass runs one more after it). */
  trigger(): void {
    if (this.running) this.loop!.kick();
  }

  /** One reconciliation of mirror pods against static pods (a step of the loop: one at a time). */
  private async pass(): Promise<void> {
    if (!this.running || !this.node?.metadata?.uid || !this.sources.ready()) return;
    const work: Promise<void>[] = [];
    const apiPods = this.sources.apiPods();
    const wanted = new Set<string>();
    for (const pod of this.sources.staticPods()) {
      const key = `${pod.metadata?.namespace ?? 'default'}/${pod.metadata?.name}`;
      wanted.add(key);
      if (this.busy.has(key)) continue;
      const hash = pod.metadata?.annotations?.[ConfigHashAnnotation] ?? pod.metadata?.uid ?? '';
      const existing = apiPods.get(key);
      if (existing && !isMirrorPod(existing)) {
        this.logger.once(
          `mirror-conflict/${key}/${existing.metadata?.uid}`,
          'warn',
          'A pod that is not a mirror pod holds the name of a static pod; no mirror pod is created',
          { pod: key },
        );
        continue;
      }
      const stale =
        existing &&
        (existing.metadata?.annotations?.[ConfigMirrorAnnotation] !== hash ||
          !!existing.metadata?.deletionTimestamp);
      if (existing && !stale) continue;
      work.push(
        this.run(key, async () => {
          if (existing) await this.deleteMirror(existing);
          await this.createMirror(pod, hash);
        }),
      );
    }
    for (const [key, pod] of apiPods) {
      if (!isMirrorPod(pod) || wanted.has(key) || this.busy.has(key)) continue;
      work.push(this.run(key, () => this.deleteMirror(pod)));
    }
    if (work.length === 0) return;
    this.passing = Promise.all(work).then(() => undefined);
    try {
      await this.passing;
    } finally {
      this.passing = undefined;
    }
  }

  private async run(key: string, fn: () => Promise<void>): Promise<void> {
    this.busy.add(key);
    try {
      await fn();
    } catch (err) {
      this.logger.warn('Mirror pod update failed; will retry', { pod: key, err: errorMessage(err) });
    } finally {
      this.busy.delete(key);
    }
  }

  private async createMirror(pod: Pod, hash: string): Promise<void> {
    const node = this.node!;
    const annotations: Record<string, string> = {
      ...pod.metadata?.annotations,
      [ConfigMirrorAnnotation]: hash,
    };
    annotations[ConfigSourceAnnotation] ??= 'file';
    const mirror: Pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: pod.metadata!.name,
        namespace: pod.metadata?.namespace ?? 'default',
        labels: { ...pod.metadata?.labels },
        annotations,
        ownerReferences: [
          {
            apiVersion: 'v1',
            kind: 'Node',
            name: node.metadata!.name!,
            uid: node.metadata!.uid!,
            controller: true,
          },
        ],
      },
      spec: { ...structuredClone(pod.spec!), nodeName: this.options.nodeName },
    };
    try {
      await this.api.createPod(mirror);
      this.created++;
      this.logger.info('Created mirror pod', {
        pod: `${mirror.metadata!.namespace}/${mirror.metadata!.name}`,
      });
    } catch (err) {
      if (!isAlreadyExists(err)) throw err; // the old one is still going away: the next pass retries
    }
  }

  private async deleteMirror(pod: Pod): Promise<void> {
    const {
      namespace = 'default',
      name,
      uid,
    } = pod.metadata as { namespace?: string; name: string; uid: string };
    try {
      await this.api.deletePod(namespace, name, { gracePeriodSeconds: 0, uid });
      this.deleted++;
      this.logger.info('Deleted mirror pod', { pod: `${namespace}/${name}`, podUID: uid });
    } catch (err) {
      if (isNotFound(err) || isConflict(err)) return;
      throw err;
    }
  }
}
