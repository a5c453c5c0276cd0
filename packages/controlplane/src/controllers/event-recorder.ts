import type { Clock, Logger } from '@nodelet/kernel';
import { rfc3339, type KubeObject } from '../object.js';
import type { Registry } from '../apiserver/registry.js';

/**
 * Writes core/v1 Events about objects, as client-go's event recorder does for upstream controllers: a
 * repeat of the same event (same object, type, reason and message) bumps `count` and `lastTimestamp`
 * of the existing Event instead of adding another.
 */
export class EventRecorder {
  private readonly recent = new Map<string, { namespace: string; name: string }>();
  private seq = 0;

  constructor(
    private readonly registry: Registry,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly component: string,
  ) {}

  record(involved: KubeObject, type: 'Normal' | 'Warning', reason: string, message: string): void {
    const meta = involved.metadata;
    const namespace = meta.namespace || 'default';
    const key = [meta.uid, type, reason, message].join('\u0000');
    const now = this.clock.now();
    const events = this.registry.byStorage('events');
    try {
      const seen = this.recent.get(key);
      if (seen) {
        const current = this.registry.store.get('events', seen.namespace, seen.name);
        if (current) {
          this.registry.store.update('events', seen.namespace, seen.name, (e) => {
            e.count = (e.count ?? 1) + 1;
            e.lastTimestamp = rfc3339(now);
            return e;
          });
          return;
        }
      }
      // `<object>.<hex nanoseconds>` as client-go names them: listed by name, events of one second stay
      // in the order they happened (kubectl describe sorts only by the second-granular lastTimestamp).
      const name = `${meta.name}.${(BigInt(now) * 1_000_000n + BigInt(this.seq++ % 1_000_000)).toString(16)}`;
      this.registry.create(events, namespace, {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { name, namespace },
        involvedObject: {
          kind: involved.kind,
          namespace: meta.namespace,
          name: meta.name,
          uid: meta.uid,
          apiVersion: involved.apiVersion,
          resourceVersion: meta.resourceVersion,
        },
        reason,
        message,
        source: { component: this.component },
        firstTimestamp: rfc3339(now),
        lastTimestamp: rfc3339(now),
        eventTime: null,
        count: 1,
        type,
        reportingComponent: this.component,
        reportingInstance: '',
      });
      this.recent.set(key, { namespace, name });
      if (this.recent.size > 4096) this.recent.delete(this.recent.keys().next().value as string);
    } catch (err) {
      // An event is best effort: losing one never fails the controller's work.
      this.logger.debug('event not recorded', { reason, err: String(err) });
    }
  }
}
