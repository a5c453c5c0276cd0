import { type FSWatcher, watch } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { extname, join } from 'node:path';
import type { Clock, Logger } from '@nodelet/kernel';
import type { Subscription } from 'rxjs';
// From RxJS's own modules, not its root entry, which loads every operator at every start of the proxy.
import { interval } from 'rxjs/internal/observable/interval';
import { merge } from 'rxjs/internal/observable/merge';
import { debounceTime } from 'rxjs/internal/operators/debounceTime';
import { Subject } from 'rxjs/internal/Subject';
import { type EndpointSlice, isEndpointSlice, isService, type Service } from './objects.js';
import type { ProxySource, ProxySourceHandler } from './source.js';

export interface FileSourceOptions {
  /** A YAML/JSON file, or a directory of them (`*.yaml`, `*.yml`, `*.json`; not recursive). */
  path: string;
  clock: Clock;
  logger: Logger;
  /** Full re-read period. Default 10 s. */
  recheckMs?: number;
  /** Quiet time after a file-system event before re-reading. Default 100 ms. */
  debounceMs?: number;
  /** Watch the path for changes. Default true. */
  watch?: boolean;
}

type ProxyObject = Service | EndpointSlice;

interface FileEntry {
  content?: string;
  objects: Map<string, ProxyObject>;
  rejected?: string;
}

// For the CommonJS packages loaded on first use.
const require = createRequire(import.meta.url);
const extensions = new Set(['.yaml', '.yml', '.json']);

/** Splits YAML/JSON text into Services and EndpointSlices (also inside `kind: List` items). */
export function parseProxyObjects(
  text: string,
  origin: string,
): { objects: ProxyObject[]; ignored: string[] } {
  const objects: ProxyObject[] = [];
  const ignored: string[] = [];
  // Loaded when a file is read: a proxy on an API server never needs the yaml package (~0.1 s, ~7 MiB).
  const { parseAllDocuments } = require('yaml') as typeof import('yaml');
  const docs = parseAllDocuments(text, { prettyErrors: true });
  const list = Array.isArray(docs) ? docs : [docs];
  list.forEach((doc, i) => {
    if (doc.errors.length > 0) {
      const e = doc.errors[0]!;
      const where = e.linePos?.[0] ? ` (line ${e.linePos[0].line}, column ${e.linePos[0].col})` : '';
      throw new Error(`${origin}: not valid YAML${where}: ${e.message.split('\n')[0]}`);
    }
    const visit = (value: unknown, where: string) => {
      if (value === null || value === undefined) return;
      if (typeof value !== 'object' || Array.isArray(value)) {
        throw new Error(`${origin}: ${where} is not an object`);
      }
      const kind = (value as { kind?: unknown }).kind;
      if (
        typeof kind === 'string' &&
        kind.endsWith('List') &&
        Array.isArray((value as { items?: unknown }).items)
      ) {
        (value as { items: unknown[] }).items.forEach((item, j) => visit(item, `${where} items[${j}]`));
      } else if (isService(value) || isEndpointSlice(value)) {
        const copy = structuredClone(value) as ProxyObject;
        copy.metadata = { ...(copy.metadata ?? {}), namespace: copy.metadata?.namespace || 'default' };
        objects.push(copy);
      } else {
        ignored.push(`${where}: kind ${JSON.stringify(kind)}`);
      }
    };
    visit(doc.toJS(), `document ${i + 1}`);
  });
  return { objects, ignored };
}

const keyOf = (o: ProxyObject) => `${o.kind} ${o.metadata?.namespace}/${o.metadata?.name}`;

/**
 * Services and EndpointSlices from YAML files: the standalone source (`nodelet proxy --services DIR`).
 * Files are re-read on file-system events and every `recheckMs`; the set of objects is diffed against
 * the last one and handed to the proxy as upserts and deletes. A file that fails to parse is reported
 * once and the objects it last produced are kept.
 */
export class FileSource implements ProxySource {
  readonly name = 'file';
  private readonly files = new Map<string, FileEntry>();
  private readonly fsEvents = new Subject<void>();
  private current = new Map<string, { object: ProxyObject; json: string }>();
  private handler: ProxySourceHandler | undefined;
  private subscription: Subscription | undefined;
  private watcher: FSWatcher | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private synced = false;
  private missingReported = false;

  constructor(private readonly options: FileSourceOptions) {}

  start(handler: ProxySourceHandler): Promise<void> {
    this.handler = handler;
    const { scheduler } = this.options.clock;
    this.subscription = merge(
      this.fsEvents.pipe(debounceTime(this.options.debounceMs ?? 100, scheduler)),
      interval(this.options.recheckMs ?? 10_000, scheduler),
    ).subscribe(() => void this.resync());
    this.options.logger.info('reading Services and EndpointSlices from files', { path: this.options.path });
    return this.resync();
  }

  stop(): void {
    this.subscription?.unsubscribe();
    this.subscription = undefined;
    this.watcher?.close();
    this.watcher = undefined;
    this.handler = undefined;
  }

  /** Re-reads now; concurrent calls coalesce. */
  resync(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = this.options.clock
      .track(
        (async () => {
          do {
            this.again = false;
            try {
              await this.read();
            } catch (err) {
              this.options.logger.error('reading service files failed', {
                path: this.options.path,
                err: (err as Error).message,
              });
            }
          } while (this.again);
        })(),
      )
      .finally(() => (this.running = undefined));
    return this.running;
  }

  private async read(): Promise<void> {
    const path = this.options.path;
    let names: string[];
    try {
      const info = await stat(path);
      if (info.isDirectory()) {
        names = (await readdir(path))
          .filter((n) => !n.startsWith('.') && extensions.has(extname(n).toLowerCase()))
          .sort()
          .map((n) => join(path, n));
      } else names = [path];
      this.ensureWatch(path);
      this.missingReported = false;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      if (!this.missingReported) {
        this.options.logger.warn('service path does not exist; proxying no services until it does', { path });
        this.missingReported = true;
      }
      names = [];
    }
    const present = new Set(names);
    for (const file of this.files.keys()) if (!present.has(file)) this.files.delete(file);
    for (const file of names) {
      let content: string;
      try {
        content = await readFile(file, 'utf8');
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
          this.files.delete(file);
          continue;
        }
        throw err;
      }
      const entry: FileEntry = this.files.get(file) ?? { objects: new Map() };
      this.files.set(file, entry);
      if (entry.content === content) continue;
      try {
        const { objects, ignored } = parseProxyObjects(content, file);
        for (const what of ignored) {
          this.options.logger.once(
            `proxy-file-ignored:${file}:${what}`,
            'info',
            'ignoring an object that is not a Service or EndpointSlice',
            {
              file,
              object: what,
            },
          );
        }
        entry.objects = new Map(objects.map((o) => [keyOf(o), o]));
        entry.content = content;
        entry.rejected = undefined;
      } catch (err) {
        if (entry.rejected !== content) {
          this.options.logger.error(`${(err as Error).message}; keeping what this file last defined`);
          entry.rejected = content;
        }
      }
    }
    this.publish();
  }

  private publish(): void {
    const handler = this.handler;
    if (!handler) return;
    const next = new Map<string, { object: ProxyObject; json: string }>();
    for (const entry of this.files.values()) {
      for (const [key, object] of entry.objects) {
        if (!next.has(key)) next.set(key, { object, json: JSON.stringify(object) });
      }
    }
    // Deletes first, then upserts: a Service moved between files is never missing in between.
    for (const [key, { object }] of this.current) {
      if (next.has(key)) continue;
      if (isService(object)) handler.deleteService(object);
      else handler.deleteEndpointSlice(object);
    }
    for (const [key, { object, json }] of next) {
      if (this.current.get(key)?.json === json) continue;
      if (isService(object)) handler.upsertService(object);
      else handler.upsertEndpointSlice(object as EndpointSlice);
    }
    this.current = next;
    if (!this.synced) {
      this.synced = true;
      handler.synced();
    }
  }

  private ensureWatch(path: string): void {
    if (this.watcher || this.options.watch === false) return;
    try {
      this.watcher = watch(path, { persistent: false }, () => this.fsEvents.next());
      this.watcher.on('error', () => {
        this.watcher?.close();
        this.watcher = undefined;
      });
    } catch {
      // The periodic re-read still sees changes.
    }
  }
}
