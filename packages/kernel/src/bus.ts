import type { Observable, Subscription } from 'rxjs';
// RxJS's root entry loads every operator it has (a tenth of a second and MiBs at every start); the kernel
// imports the few it uses from the modules the package exports for them.
import { defer } from 'rxjs/internal/observable/defer';
import { EMPTY } from 'rxjs/internal/observable/empty';
import { catchError } from 'rxjs/internal/operators/catchError';
import { filter } from 'rxjs/internal/operators/filter';
import { share } from 'rxjs/internal/operators/share';
import { Subject } from 'rxjs/internal/Subject';
import type { Clock } from './clock.js';
import type { EventCatalogue, EventType, NodeletEvent } from './events.js';
import type { Logger } from './logger.js';

/**
 * The event bus: a typed stream of facts. Producers `emit`; consumers `on(type)` for a stream or
 * `subscribe(type, handler)` for a plain callback. A handler that throws, or an effect stream that
 * errors, is logged and isolated: it never kills the bus or the other subscribers.
 */
export class EventBus {
  private readonly subject = new Subject<NodeletEvent>();
  /** Every event, for observers (metrics, audit, a UI). */
  readonly events$: Observable<NodeletEvent> = this.subject.asObservable();

  constructor(
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {}

  emit<K extends EventType>(type: K, payload: EventCatalogue[K]): void {
    this.subject.next({ ...payload, type, at: this.clock.now() } as unknown as NodeletEvent);
  }

  on<K extends EventType>(...types: K[]): Observable<NodeletEvent<K>> {
    const wanted = new Set<EventType>(types);
    return this.subject.pipe(filter((e) => wanted.has(e.type))) as unknown as Observable<NodeletEvent<K>>;
  }

  /** Calls `handler` for each event of `type`; a throwing handler is logged and keeps its subscription. */
  subscribe<K extends EventType>(type: K | K[], handler: (event: NodeletEvent<K>) => void): Subscription {
    const types = Array.isArray(type) ? type : [type];
    return this.on(...types).subscribe((event) => {
      try {
        handler(event);
      } catch (err) {
        this.logger.error('event handler failed', { event: event.type, err: String(err) });
      }
    });
  }

  /**
   * Runs an effect stream for the life of the returned subscription. When it errors, the error is
   * logged and the stream is subscribed again (NgRx effects' resubscribe-on-error).
   */
  runEffect(name: string, effect: () => Observable<unknown>): Subscription {
    const guarded = (): Observable<unknown> =>
      defer(effect).pipe(
        catchError((err) => {
          this.logger.error('effect failed; resubscribing', { effect: name, err: String(err) });
          return guarded();
        }),
      );
    return guarded()
      .pipe(
        share(),
        catchError(() => EMPTY),
      )
      .subscribe();
  }

  complete(): void {
    this.subject.complete();
  }
}
