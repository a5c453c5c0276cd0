import type { Pod } from '@nodelet/api';
import { CriAnnotations, CriLabels, type RuntimeService } from '@nodelet/cri';
import type { Logger } from '@nodelet/kernel';
import type { KubeRuntime } from './manager.js';
import { NODE_NAME_LABEL } from './sandbox.js';

/**
 * Housekeeping's part of the runtime's cleanup (upstream HandlePodCleanups' killing of unwanted pods):
 * the sandboxes and containers of pods no one wants (deleted while the kubelet was down) are killed and
 * removed. Dead containers, sandboxes and log directories are container-gc.ts's. Only this node's objects:
 * another kubelet on the same runtime owns the others.
 */
export class RuntimeGarbageCollector {
  constructor(
    private readonly runtime: RuntimeService,
    private readonly kubeRuntime: KubeRuntime,
    private readonly options: { nodeName: string; logger: Logger },
  ) {}

  /** Kills and removes every pod of this node in the runtime that `wanted` does not know. */
  async removeOrphanedPods(wanted: (uid: string) => boolean): Promise<void> {
    const { items } = await this.runtime.listPodSandbox({});
    const orphans = new Map<string, { name: string; namespace: string }>();
    for (const sb of items) {
      const uid = sb.labels[CriLabels.PodUID];
      if (!uid || sb.labels[NODE_NAME_LABEL] !== this.options.nodeName) continue;
      if (wanted(uid)) continue;
      orphans.set(uid, {
        name: sb.labels[CriLabels.PodName] ?? '',
        namespace: sb.labels[CriLabels.PodNamespace] ?? '',
      });
    }
    for (const [uid, { name, namespace }] of orphans) {
      const status = await this.kubeRuntime.getPodStatus(uid, name, namespace);
      const grace = Number(
        (
          await this.runtime.listContainers({
            filter: { id: '', podSandboxId: '', labelSelector: { [CriLabels.PodUID]: uid } },
          })
        ).containers[0]?.annotations[CriAnnotations.PodTerminationGracePeriod] ?? 30,
      );
      const pod: Pod = {
        metadata: { uid, name, namespace },
        spec: { containers: [], terminationGracePeriodSeconds: grace },
      };
      this.options.logger.info('Cleaning up orphaned pod', { pod: `${namespace}/${name}`, podUID: uid });
      await this.kubeRuntime.killPodWithStatus(pod, status, undefined, 'the pod is no longer wanted');
      await this.kubeRuntime.removePod(pod, await this.kubeRuntime.getPodStatus(uid, name, namespace));
    }
  }
}
