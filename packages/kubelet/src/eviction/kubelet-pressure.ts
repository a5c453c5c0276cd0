import type { Pod } from '@nodelet/api';
import type { ImageService, RuntimeService, StatsProvider } from '@nodelet/cri';
import type { Clock, EventBus, Logger } from '@nodelet/kernel';
import type { ReservationConfig } from '../cm/node-allocatable.js';
import { DEFAULT_IMAGE_GC_POLICY, ImageGarbageCollector, type ImageGCPolicy } from '../images/image-gc.js';
import type { ContainerGarbageCollector } from '../kuberuntime/container-gc.js';
import { emptyDirUsage } from '../stats/volume-usage.js';
import { EvictionManager } from './eviction-manager.js';
import type { PressureCondition } from './signals.js';
import { evictionConfig, type EvictionSettings } from './thresholds.js';

/** What the kubelet gives its eviction manager and image garbage collector. */
export interface NodePressureDeps {
  runtime: RuntimeService;
  images: ImageService;
  stats: StatsProvider;
  clock: Clock;
  bus: EventBus;
  logger: Logger;
  rootDir: string;
  containerGC: Pick<ContainerGarbageCollector, 'deleteAllUnusedContainers'>;
  /** Pods admitted, not finished and not already chosen for eviction. */
  activePods(): Pod[];
  /** Stops the pod for good as evicted (through its worker). */
  evict(pod: Pod, gracePeriodSeconds: number, message: string): void;
  /** Whether a pod is finished: its containers stopped (Failed or Succeeded), or it is gone. */
  podIsFinished(pod: Pod): boolean;
  conditionsChanged(conditions: PressureCondition[]): void;
  settings: {
    eviction?: EvictionSettings;
    imageGC?: Partial<ImageGCPolicy>;
    reservation?: ReservationConfig;
  };
}

/**
 * The kubelet's eviction manager and image garbage collector, wired: image GC's failures are Node
 * events; eviction reclaims with the container and image collectors first, measures emptyDir volumes,
 * and hands the pod it chose to the kubelet.
 */
export function nodePressureManagers(deps: NodePressureDeps): {
  evictionManager: EvictionManager;
  imageGC: ImageGarbageCollector;
} {
  const { clock, bus, logger, settings } = deps;
  const nodeEvent = (reason: string, message: string) =>
    bus.emit('[Kubelet] Node Event', { eventType: 'Warning', reason, message });
  const imageGC = new ImageGarbageCollector(
    {
      runtime: deps.runtime,
      images: deps.images,
      stats: deps.stats,
      clock,
      logger: logger.child('image-gc'),
      nodeEvent,
    },
    { ...DEFAULT_IMAGE_GC_POLICY, ...settings.imageGC },
  );
  const evictionManager = new EvictionManager(
    {
      stats: deps.stats,
      clock,
      logger: logger.child('eviction'),
      activePods: () => deps.activePods(),
      evictPod: async (pod, gracePeriodSeconds, message, signal) => {
        const uid = pod.metadata!.uid!;
        logger.info('Evicting pod', {
          pod: `${pod.metadata?.namespace}/${pod.metadata?.name}`,
          podUID: uid,
          signal,
        });
        deps.evict(pod, gracePeriodSeconds, message);
        bus.emit('[Eviction] Eviction Started', { podUid: uid, signal, message });
        return true;
      },
      podIsFinished: (pod) => deps.podIsFinished(pod),
      conditionsChanged: (conditions) => deps.conditionsChanged(conditions),
      nodeEvent,
      reclaim: {
        deleteAllUnusedContainers: () => deps.containerGC.deleteAllUnusedContainers(),
        deleteUnusedImages: () => imageGC.deleteUnusedImages(),
      },
      volumeStats: (pod) => emptyDirUsage(deps.rootDir, pod, clock.now()),
      hasDedicatedImageFs: async () => (await deps.stats.hasDedicatedImageFs?.()) ?? false,
    },
    evictionConfig(settings.eviction ?? fromReservation(settings.reservation)),
  );
  return { evictionManager, imageGC };
}

/** `reservation.evictionHard` (already parsed) as settings, when no `eviction` settings were given. */
function fromReservation(reservation: ReservationConfig | undefined): EvictionSettings {
  const hard = reservation?.evictionHard;
  if (!hard) return {};
  const text = (t: (typeof hard)[number]) =>
    t.quantity !== undefined ? String(t.quantity) : `${Math.round((t.percentage ?? 0) * 1e6) / 1e4}%`;
  return { evictionHard: Object.fromEntries(hard.map((t) => [t.signal, text(t)])) };
}
