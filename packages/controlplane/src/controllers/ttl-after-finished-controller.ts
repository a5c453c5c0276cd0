import type { Clock, Logger } from '@nodelet/kernel';
import type { Registry } from '../apiserver/registry.js';
import { ApiError } from '../apiserver/status.js';
import { isJobFinished, jobFinishedAt } from './job-status.js';
import { WorkQueue } from './work-queue.js';

/**
 * The TTL-after-finished controller (upstream's pkg/controller/ttlafterfinished): deletes a finished Job
 * `ttlSecondsAfterFinished` after it finished (completionTime, or the Failed condition's time), on the
 * clock. The Job goes with propagation Background, so the garbage collector removes its pods after it.
 */
export class TtlAfterFinishedController {
  private readonly queue: WorkQueue;
  private unsubscribe?: () => void;

  constructor(
    private readonly registry: Registry,
    private readonly clock: Clock,
    logger: Logger,
  ) {
    this.queue = new WorkQueue('ttl-after-finished', (k) => this.sync(k), clock, logger);
  }

  start(): void {
    this.unsubscribe = this.registry.store.subscribe('jobs', (e) =>
      this.queue.add(`${e.namespace}/${e.name}`),
    );
    for (const { object } of this.registry.store.listAll('jobs'))
      this.queue.add(`${object.metadata.namespace}/${object.metadata.name}`);
  }

  stop(): void {
    this.unsubscribe?.();
    this.queue.stop();
  }

  /** One step: deletes the Job `namespace/name` if its TTL has run out, or comes back when it will. */
  sync(key: string): void {
    const [namespace, name] = key.split('/') as [string, string];
    const job = this.registry.store.get('jobs', namespace, name)?.object;
    const ttl = job?.spec?.ttlSecondsAfterFinished;
    if (!job || typeof ttl !== 'number' || job.metadata.deletionTimestamp || !isJobFinished(job)) return;
    const finished = jobFinishedAt(job);
    if (finished === undefined) return;
    const left = finished + ttl * 1000 - this.clock.now();
    if (left > 0) {
      this.queue.addAfter(key, left);
      return;
    }
    try {
      this.registry.delete(this.registry.byStorage('jobs'), namespace, name, {
        propagationPolicy: 'Background',
        preconditions: { uid: job.metadata.uid },
      });
    } catch (err) {
      if (!(err instanceof ApiError && (err.code === 404 || err.code === 409))) throw err;
    }
  }
}
