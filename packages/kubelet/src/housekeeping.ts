import { errorMessage, type Logger } from '@nodelet/kernel';
import type { RuntimeGarbageCollector } from './kuberuntime/index.js';
import type { VolumeManager } from './volume/index.js';

/**
 * Housekeeping (upstream HandlePodCleanups): removes what no source wants — sandboxes and containers of
 * pods that are neither desired nor being terminated (deleted while the kubelet was down) — once every
 * source has been seen, so a restart adopts its pods instead of killing them — then the directories
 * under `<root>/pods/` of pods no one wants (upstream cleanupOrphanedPodDirs).
 */
export class Housekeeping {
  private failures = 0;

  constructor(
    private readonly deps: {
      gc: RuntimeGarbageCollector;
      volumes: VolumeManager;
      /** Whether every pod source has been seen at least once. */
      seenAllSources(): boolean;
      /** Whether the kubelet wants (runs or terminates) the pod. */
      wanted(uid: string): boolean;
      logger: Logger;
    },
  ) {}

  async run(): Promise<void> {
    if (!this.deps.seenAllSources()) return;
    try {
      await this.deps.gc.removeOrphanedPods((uid) => this.deps.wanted(uid));
      await this.deps.volumes.removeOrphanedPodDirs((uid) => this.deps.wanted(uid));
      if (this.failures > 0) this.deps.logger.info('housekeeping succeeded again');
      this.failures = 0;
    } catch (err) {
      // Once per backoff step (1, 2, 4, … failures in a row), not every period while the runtime is down.
      const failures = ++this.failures;
      if ((failures & (failures - 1)) === 0) {
        this.deps.logger.warn('housekeeping failed; will retry', { failures, err: errorMessage(err) });
      }
    }
  }
}
