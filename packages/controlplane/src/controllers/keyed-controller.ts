import type { Clock, Logger } from '@nodelet/kernel';
import type { KubeObject } from '../object.js';
import type { Registry } from '../apiserver/registry.js';
import type { StoreEvent } from '../storage/revision-store.js';
import type { EventRecorder } from './event-recorder.js';
import { controllerRefOf } from './pod-control.js';
import { WorkQueue } from './work-queue.js';

/**
 * The frame of a controller of one kind (upstream's informer + work queue): a queue of `namespace/name`
 * keys fed by every event of its kind and, on start, by every object of it. `watchMore` adds what else the
 * controller reacts to (each subscription returns its unsubscribe); `sync` does one step for one key.
 */
export abstract class KeyedController {
  protected readonly queue: WorkQueue;
  private readonly unsubscribe: (() => void)[] = [];

  constructor(
    protected readonly registry: Registry,
    protected readonly clock: Clock,
    protected readonly logger: Logger,
    protected readonly events: EventRecorder | undefined,
    /** The storage name of the kind: `jobs`, `deployments`, … */
    protected readonly storage: string,
    queueName: string,
  ) {
    this.queue = new WorkQueue(queueName, (k) => this.sync(k), clock, logger);
  }

  /** One step for the object `namespace/name`. */
  abstract sync(key: string): void;

  /** Subscriptions beyond the kind itself. */
  protected watchMore(): (() => void)[] {
    return [];
  }

  start(): void {
    this.unsubscribe.push(
      this.registry.store.subscribe(this.storage, (e) => this.queue.add(`${e.namespace}/${e.name}`)),
      ...this.watchMore(),
    );
    this.enqueueAll();
  }

  stop(): void {
    for (const u of this.unsubscribe.splice(0)) u();
    this.queue.stop();
  }

  protected enqueueAll(): void {
    for (const { object } of this.registry.store.listAll(this.storage))
      this.queue.add(`${object.metadata.namespace}/${object.metadata.name}`);
  }

  /**
   * Enqueues the controller of an event's object, before and after the change, when it is of `kind` in
   * `group` (a Job's pods → the Job; a CronJob's Jobs → the CronJob).
   */
  protected enqueueControllerOf(e: StoreEvent, kind: string, group: string): void {
    for (const object of e.prev ? [e.object, e.prev] : [e.object]) {
      const ref = controllerRefOf(object as KubeObject);
      if (ref?.kind === kind && ref.apiVersion.startsWith(`${group}/`))
        this.queue.add(`${object.metadata.namespace}/${ref.name}`);
    }
  }
}
