import type { RuntimeService } from '@nodelet/cri';
import type { Clock, Logger } from '@nodelet/kernel';
import { ContainerGarbageCollector } from './kuberuntime/container-gc.js';
import { DEFAULT_CONTAINER_GC_POLICY } from './kuberuntime/container-gc-policy.js';
import type { Kubelet } from './kubelet.js';

/**
 * The kubelet's container garbage collector, wired to what the kubelet knows of its pods (upstream: the
 * pod workers as podStateProvider, the config's seen sources as sourcesReadyProvider).
 */
export function kubeletContainerGC(
  kubelet: Pick<Kubelet, 'kubeRuntime' | 'podManager' | 'workers' | 'podConfig' | 'options'>,
  deps: { runtime: RuntimeService; clock: Clock; logger: Logger },
): ContainerGarbageCollector {
  const { workers, podManager, options } = kubelet;
  const { periodMs: _period, ...policy } = options.containerGC ?? {};
  const seenAllSources = () => kubelet.podConfig.seenAllSources();
  // A pod no worker runs is terminated; a terminated one no source wants is deleted. Before every source
  // was seen, a pod missing from them may only not have been read yet: none counts as deleted.
  const isTerminated = (uid: string) => !workers.isKnown(uid) || workers.phase(uid) === 'terminated';
  return new ContainerGarbageCollector(
    {
      runtime: deps.runtime,
      removeContainer: (id) => kubelet.kubeRuntime.containers.remove(id),
      clock: deps.clock,
      logger: deps.logger.child('container-gc'),
      nodeName: options.nodeName,
      podLogsDir: options.podLogsDir,
      pods: {
        isTerminated,
        isDeleted: (uid) => seenAllSources() && !podManager.has(uid) && isTerminated(uid),
      },
      allSourcesReady: seenAllSources,
    },
    { ...DEFAULT_CONTAINER_GC_POLICY, ...policy },
  );
}
