/**
 * WATCH: initial events or a backlog from a resourceVersion, then every change the selectors see, with
 * periodic bookmarks for watches that asked for them.
 */
import type { KubeObject } from '../object.js';
import { StoreError, type StoreEvent, type StoredObject } from '../storage/revision-store.js';
import { matchesSelectors, parseFields, parseRevision } from './registry-helpers.js';
import type { RegistryParts, Watch, WatchEventType, WatchOptions, WatchSink } from './registry-types.js';
import { apiVersionOf, type ResourceType } from './resource-type.js';
import { parseLabelSelector } from './selectors.js';
import { expired, invalid } from './status.js';

const initialEventsEnd = 'k8s.io/initial-events-end';

export function watchObjects(
  p: RegistryParts,
  t: ResourceType,
  namespace: string | undefined,
  options: WatchOptions,
  sink: WatchSink,
): Watch {
  const labels = parseLabelSelector(options.labelSelector);
  const fields = parseFields(t, options.fieldSelector);
  const scope = t.namespaced ? namespace : undefined;
  const rv = options.resourceVersion;
  const bookmarks = options.allowWatchBookmarks === true;
  let stopped = false;
  let lastRev = p.store.revision;

  const deliver = (e: StoreEvent) => {
    if (stopped) return;
    if (scope !== undefined && e.namespace !== scope) return;
    lastRev = e.rev;
    const now = e.op === 'delete' ? false : matchesSelectors(t, e.object, labels, fields);
    const before = e.op === 'create' ? false : e.prev ? matchesSelectors(t, e.prev, labels, fields) : now;
    let type: WatchEventType | undefined;
    if (e.op === 'create') type = now ? 'ADDED' : undefined;
    else if (e.op === 'update')
      type = now && before ? 'MODIFIED' : now ? 'ADDED' : before ? 'DELETED' : undefined;
    else type = before || matchesSelectors(t, e.object, labels, fields) ? 'DELETED' : undefined;
    if (!type) return;
    if (t.fromStorage) sink.send(type, t.fromStorage(e.object));
    else sink.send(type, e.object, e.json);
  };

  let backlog: StoreEvent[] = [];
  const initial: StoredObject[] = [];
  const sendInitial = options.sendInitialEvents === true || rv === undefined || rv === '' || rv === '0';
  if (options.sendInitialEvents === true && !(bookmarks && options.resourceVersionMatch === 'NotOlderThan')) {
    throw invalid('ListOptions', 'meta.k8s.io', '', [
      {
        field: 'sendInitialEvents',
        message:
          'Forbidden: sendInitialEvents requires setting allowWatchBookmarks=true and resourceVersionMatch=NotOlderThan',
      },
    ]);
  }
  if (sendInitial && options.sendInitialEvents !== false) {
    initial.push(
      ...p.store.listAll(t.storage, scope).filter((s) => matchesSelectors(t, s.object, labels, fields)),
    );
  } else if (rv !== undefined && rv !== '' && rv !== '0') {
    const from = parseRevision(rv);
    try {
      backlog = p.store.eventsSince(t.storage, Math.min(from, p.store.revision));
    } catch (err) {
      if (err instanceof StoreError && err.code === 'Compacted') {
        sink.fail(expired(err.message).toStatus());
        return { stop: () => {} };
      }
      throw err;
    }
    lastRev = Math.max(from, 0);
  }
  // Subscribe in the same tick as the read: nothing written in between can be missed.
  const unsubscribe = p.store.subscribe(t.storage, deliver);
  for (const item of initial) {
    if (t.fromStorage) sink.send('ADDED', t.fromStorage(item.object));
    else sink.send('ADDED', item.object);
  }
  if (options.sendInitialEvents === true) {
    sink.send('BOOKMARK', bookmark(t, p.store.revision, true));
  }
  for (const e of backlog) deliver(e);
  const bookmarkLoop = bookmarks
    ? p.clock.loop(() => sink.send('BOOKMARK', bookmark(t, Math.max(lastRev, p.store.revision))), {
        period: p.bookmarkIntervalMs,
        initialDelay: p.bookmarkIntervalMs,
      })
    : undefined;
  return {
    stop: () => {
      if (stopped) return;
      stopped = true;
      unsubscribe();
      bookmarkLoop?.stop();
    },
  };
}

function bookmark(t: ResourceType, rev: number, initialEnd = false): KubeObject {
  return {
    apiVersion: apiVersionOf(t),
    kind: t.kind,
    metadata: {
      resourceVersion: String(rev),
      ...(initialEnd ? { annotations: { [initialEventsEnd]: 'true' } } : {}),
    },
  };
}
