/**
 * A watch as an HTTP stream: one JSON event per line (as Table rows or PartialObjectMetadata when asked),
 * events of one turn written together, ended by its timeout, by the client, or by the server.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Deadline } from '@nodelet/kernel';
import type { KubeObject } from '../object.js';
import { negotiate, parseIncludeObject, toPartial, toTable } from './negotiation.js';
import type { WatchEventType } from './registry.js';
import { boolParam, intParam, type ResourceRequest } from './request-params.js';
import type { ServeContext } from './resource-handler.js';
import { apiVersionOf } from './resource-type.js';
import { ApiError } from './status.js';

export function serveWatch(
  ctx: ServeContext,
  req: IncomingMessage,
  res: ServerResponse,
  q: URLSearchParams,
  r: ResourceRequest,
  listOptions: Record<string, unknown>,
): void {
  const { registry, clock } = ctx;
  const t = r.type;
  const representation = negotiate(req.headers.accept);
  if (representation.kind === 'yaml')
    throw new ApiError(406, 'NotAcceptable', 'watch streams are served as JSON');
  const include = parseIncludeObject(q.get('includeObject'));
  let headersSent = false;
  let first = true;
  let ended = false;
  const start = () => {
    if (headersSent) return;
    headersSent = true;
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-cache, private' });
    res.flushHeaders();
  };
  const write = (type: WatchEventType, object: KubeObject, json?: string) => {
    if (ended) return;
    start();
    let line: string | Buffer;
    if (representation.kind === 'table' && type !== 'BOOKMARK' && type !== 'ERROR') {
      const table = toTable(
        t,
        [object],
        { resourceVersion: object.metadata.resourceVersion ?? '' },
        {
          now: clock.now(),
          include,
          version: representation.version,
          apiVersion: apiVersionOf(t),
          noHeaders: !first,
        },
      );
      first = false;
      line = `{"type":"${type}","object":${JSON.stringify(table)}}\n`;
    } else if (representation.kind === 'metadata' && type !== 'BOOKMARK' && type !== 'ERROR') {
      line = `{"type":"${type}","object":${JSON.stringify(toPartial(object, representation.version))}}\n`;
    } else if (json !== undefined) {
      line = sharedLine(type, json);
    } else {
      line = `{"type":"${type}","object":${JSON.stringify(object)}}\n`;
    }
    // Events of one turn of the event loop go out in one write (one TLS record run, one syscall).
    const bytes = typeof line === 'string' ? Buffer.from(line) : line;
    pending.push(bytes);
    pendingBytes += bytes.length;
    if (pendingBytes + res.writableLength > ctx.maxWatchBufferBytes) return cutOff();
    if (pending.length === 1) setImmediate(flush);
  };
  const pending: Buffer[] = [];
  let pendingBytes = 0;
  const flush = () => {
    if (ended || pending.length === 0) return;
    res.write(pending.length === 1 ? pending[0]! : Buffer.concat(pending));
    pending.length = 0;
    pendingBytes = 0;
  };
  // A consumer that stops reading is cut off, its unread events dropped with the connection (ending the
  // stream politely would keep them buffered for a reader that may never come); it resumes from its
  // last resourceVersion, as from upstream's watch cache when it drops a watcher that does not keep up.
  const cutOff = () => {
    pending.length = 0;
    pendingBytes = 0;
    finish();
    res.destroy();
  };
  const timeoutSeconds = intParam(q, 'timeoutSeconds');
  const minMs = ctx.minWatchTimeoutMs ?? 30 * 60_000;
  const timeoutMs =
    timeoutSeconds !== undefined && timeoutSeconds > 0 ? timeoutSeconds * 1000 : minMs * (1 + Math.random());
  let timeout: Deadline | undefined;
  let watch = { stop: () => {} };
  const finish = () => {
    if (ended) return;
    flush();
    ended = true;
    watch.stop();
    timeout?.cancel();
    ctx.watches.delete(finish);
    start();
    res.end();
  };
  ctx.watches.add(finish);
  res.on('close', finish);
  try {
    watch = registry.watch(
      t,
      r.namespace,
      {
        ...listOptions,
        allowWatchBookmarks: boolParam(q, 'allowWatchBookmarks'),
        ...(q.has('sendInitialEvents') ? { sendInitialEvents: boolParam(q, 'sendInitialEvents') } : {}),
      },
      {
        send: write,
        fail: (status) => {
          write('ERROR', status as unknown as KubeObject);
          finish();
        },
      },
    );
  } catch (err) {
    ctx.watches.delete(finish);
    ended = true;
    throw err;
  }
  if (!ended) {
    start();
    timeout = clock.deadline(timeoutMs);
    timeout.signal.addEventListener('abort', finish, { once: true });
  }
}

/**
 * The encoded line of a stored event, made once for every watcher it goes to: the registry hands each
 * watcher the same JSON string, one after the other, so the last one made is the one to reuse.
 */
let lastShared: { type: string; json: string; line: Buffer } | undefined;

function sharedLine(type: string, json: string): Buffer {
  if (lastShared && lastShared.json === json && lastShared.type === type) return lastShared.line;
  const line = Buffer.from(`{"type":"${type}","object":${json}}\n`);
  lastShared = { type, json, line };
  return line;
}
