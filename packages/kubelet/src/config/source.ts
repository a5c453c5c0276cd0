import type { Pod } from '@nodelet/api';
import type { PodSourceName } from '../events.js';
import type { Observable } from 'rxjs';

/**
 * A pod source: where desired pods come from (the static-manifest path, the manifest URL, the API
 * server). A source emits its whole current set each time it changes, as upstream's SET updates do;
 * PodConfig turns the snapshots into Added/Updated/Removed facts.
 */
export interface PodSource {
  readonly name: PodSourceName;
  /** The source's full set of pods, each time it changes. The first one marks the source as seen. */
  readonly snapshots$: Observable<Pod[]>;
  /** Where a pod of the current snapshot was read: a file path, a URL. */
  originOf(pod: Pod): string;
  start(): void;
  /** Releases watchers and timers; `start` may be called again later. */
  stop(): void;
}
