import type { Clock, Logger, Loop } from '@nodelet/kernel';
import { rfc3339, type KubeObject } from '../object.js';
import type { Registry } from '../apiserver/registry.js';
import { ApiError } from '../apiserver/status.js';
import { nodeCondition } from './node-taints.js';

/**
 * The pod garbage collector (upstream's pkg/controller/podgc), for the pods no kubelet will ever finish.
 * Every `periodMs` (20 s) it force-deletes (phase Failed, then grace period 0):
 *
 *   orphaned      bound to a node that has not existed for `quarantineMs` (40 s) — `kubectl delete node`
 *                 after a node died; condition DisruptionTarget=True, reason DeletionByPodGC
 *   out of service terminating on a node that is not Ready and tainted node.kubernetes.io/out-of-service
 *                 (`kubectl taint node <n> node.kubernetes.io/out-of-service=nodeshutdown:NoExecute`)
 *   unscheduled   terminating and never bound
 *
 * (Upstream's threshold of terminated pods, --terminated-pod-gc-threshold, is not kept.)
 */
export const TaintNodeOutOfService = 'node.kubernetes.io/out-of-service';

export class PodGarbageCollector {
  /** Node name → when a pod was first seen bound to it while it did not exist. */
  private readonly missingSince = new Map<string, number>();
  private loop?: Loop;

  constructor(
    private readonly registry: Registry,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly options: { periodMs?: number; quarantineMs?: number } = {},
  ) {}

  start(): void {
    const period = this.options.periodMs ?? 20_000;
    this.loop = this.clock.loop(() => this.gc(), {
      period,
      initialDelay: period,
      onError: (err) => this.logger.warn('pod garbage collection failed', { err: String(err) }),
    });
  }

  stop(): void {
    this.loop?.stop();
  }

  /** One pass over every pod. */
  gc(): void {
    const now = this.clock.now();
    const quarantine = this.options.quarantineMs ?? 40_000;
    const nodes = new Map(
      this.registry.store.listAll('nodes').map((s) => [s.object.metadata.name!, s.object]),
    );
    for (const name of this.missingSince.keys()) if (nodes.has(name)) this.missingSince.delete(name);
    for (const { object: pod } of this.registry.store.listAll('pods')) {
      const nodeName: string | undefined = pod.spec?.nodeName;
      const terminating = !!pod.metadata.deletionTimestamp;
      if (!nodeName) {
        if (terminating) this.forceDelete(pod, 'unscheduled terminating pod');
        continue;
      }
      const node = nodes.get(nodeName);
      if (!node) {
        const since = this.missingSince.get(nodeName) ?? now;
        this.missingSince.set(nodeName, since);
        if (now - since >= quarantine) this.forceDelete(pod, 'orphaned pod', 'PodGC: node no longer exists');
        continue;
      }
      if (terminating && nodeCondition(node, 'Ready')?.status !== 'True' && outOfService(node))
        this.forceDelete(pod, 'terminating pod on an out-of-service node');
    }
  }

  private forceDelete(pod: KubeObject, why: string, disruption?: string): void {
    const namespace = pod.metadata.namespace!;
    const name = pod.metadata.name!;
    this.logger.info(`force-deleting ${why}`, { pod: `${namespace}/${name}`, node: pod.spec?.nodeName });
    try {
      this.registry.store.update('pods', namespace, name, (p) => {
        const phase = p.status?.phase;
        const conditions = (p.status?.conditions ?? []).filter(
          (c: any) => !disruption || c?.type !== 'DisruptionTarget',
        );
        if (disruption) {
          conditions.push({
            type: 'DisruptionTarget',
            status: 'True',
            reason: 'DeletionByPodGC',
            message: disruption,
            lastTransitionTime: rfc3339(this.clock.now()),
          });
        }
        p.status = {
          ...(p.status ?? {}),
          phase: phase === 'Succeeded' || phase === 'Failed' ? phase : 'Failed',
          conditions,
        };
        return p;
      });
      this.registry.delete(this.registry.byStorage('pods'), namespace, name, { gracePeriodSeconds: 0 });
    } catch (err) {
      if (!(err instanceof ApiError && err.code === 404)) throw err;
    }
  }
}

function outOfService(node: KubeObject): boolean {
  return (node.spec?.taints ?? []).some(
    (t: any) => t?.key === TaintNodeOutOfService && t?.effect === 'NoExecute',
  );
}
