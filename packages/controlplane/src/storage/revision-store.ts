import Database from 'better-sqlite3';
import { chmodSync, closeSync, existsSync, openSync } from 'node:fs';
import type { KubeObject } from '../object.js';
import { StoredValues } from './stored-values.js';
import type { StoredValue, ValueTransformer } from './value-transformers.js';

/**
 * The control plane's storage: a revision log in SQLite, shaped like kine (k3s's etcd shim).
 *
 * Every write appends one row to `log` with the next revision, a cluster-wide counter that only grows; the
 * revision is the object's `metadata.resourceVersion`. `live` maps each existing key to the revision of its
 * current row, so a get or a list reads the newest row per key without scanning history. Watches are fed
 * from the log: a watch that starts at revision R reads the rows after R, then follows live writes.
 *
 *   log   rev │ resource │ namespace │ name │ op (1 create, 2 update, 3 delete) │ prev_rev │ value
 *         (JSON text; a BLOB for resources a transformer encrypts at rest, current and history rows alike)
 *   live  resource │ namespace │ name → rev
 *   meta  'compact_rev' → C: history up to C is folded, so nothing before C can be replayed (410 Gone)
 *
 * Compaction at C removes every row at or before C that a later row at or before C supersedes, and every
 * deletion row at or before C. What remains is enough to rebuild the state at any revision from C on:
 * for each key, the newest row at or before that revision.
 *
 * better-sqlite3 is synchronous and this process is the only writer, so a read-modify-write that does not
 * await in between is atomic: optimistic concurrency is a comparison, and a watch that reads the log and
 * then subscribes misses nothing.
 */

export type StoreOp = 'create' | 'update' | 'delete';
const opCode: Record<StoreOp, number> = { create: 1, update: 2, delete: 3 };
const opName: Record<number, StoreOp> = { 1: 'create', 2: 'update', 3: 'delete' };

export interface StoredObject {
  readonly rev: number;
  readonly object: KubeObject;
}

/** A committed write, as watches see it. */
export interface StoreEvent {
  readonly op: StoreOp;
  readonly resource: string;
  readonly namespace: string;
  readonly name: string;
  readonly rev: number;
  /** The object after the write; for a delete, its last state stamped with the deletion's revision. */
  readonly object: KubeObject;
  /** The object before the write (update and delete), when known. */
  readonly prev?: KubeObject;
  /** `object` as JSON, serialized once for every watcher. */
  readonly json: string;
}

export type StoreListener = (event: StoreEvent) => void;

export class StoreError extends Error {
  constructor(
    readonly code: 'NotFound' | 'AlreadyExists' | 'Conflict' | 'Compacted' | 'FutureRevision',
    message: string,
  ) {
    super(message);
    this.name = `Store${code}Error`;
  }
}

export interface RevisionStoreOptions {
  /** `FULL` makes every commit durable against power loss; `NORMAL` (default) against process crashes. */
  synchronous?: 'NORMAL' | 'FULL';
  /** Called when a subscriber throws (the write stands; the other subscribers still run). */
  onListenerError?: (err: unknown) => void;
  /** How values of a resource are written and read (encryption at rest); undefined: JSON text as is. */
  transformerFor?: (resource: string) => ValueTransformer | undefined;
}

interface LogRow {
  rev: number;
  namespace: string;
  name: string;
  op: number;
  prev_rev: number | null;
  value: StoredValue;
}

export interface ListPage {
  items: StoredObject[];
  /** The key after which the next page starts, when the page was cut short by `limit`. */
  next?: { namespace: string; name: string };
}

export class RevisionStore {
  private readonly db: Database.Database;
  private rev: number;
  private compacted: number;
  private readonly listeners = new Map<string, Set<StoreListener>>();
  private readonly stmts;
  private readonly onListenerError: (err: unknown) => void;
  private readonly values: StoredValues;

  constructor(
    readonly path: string,
    options: RevisionStoreOptions = {},
  ) {
    this.onListenerError = options.onListenerError ?? (() => {});
    this.values = new StoredValues(options.transformerFor ?? (() => undefined));
    // Every Secret is in here: the file exists 0600 before SQLite opens it, which then makes its -wal and
    // -shm files with the same mode (the umask is not relied on).
    if (path !== ':memory:') {
      closeSync(openSync(path, 'a', 0o600));
      chmodSync(path, 0o600);
    }
    this.db = new Database(path);
    this.db.pragma('journal_mode = WAL');
    for (const suffix of ['-wal', '-shm']) if (existsSync(path + suffix)) chmodSync(path + suffix, 0o600);
    this.db.pragma(`synchronous = ${options.synchronous ?? 'NORMAL'}`);
    this.db.pragma('foreign_keys = OFF');
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS log (
        rev INTEGER PRIMARY KEY,
        resource TEXT NOT NULL,
        namespace TEXT NOT NULL,
        name TEXT NOT NULL,
        op INTEGER NOT NULL,
        prev_rev INTEGER,
        value TEXT NOT NULL
      );
      CREATE INDEX IF NOT EXISTS log_by_key ON log(resource, namespace, name, rev);
      CREATE TABLE IF NOT EXISTS live (
        resource TEXT NOT NULL,
        namespace TEXT NOT NULL,
        name TEXT NOT NULL,
        rev INTEGER NOT NULL,
        PRIMARY KEY (resource, namespace, name)
      ) WITHOUT ROWID;
      CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
    `);
    const db = this.db;
    this.stmts = {
      insertLog: db.prepare(
        'INSERT INTO log (rev, resource, namespace, name, op, prev_rev, value) VALUES (?, ?, ?, ?, ?, ?, ?)',
      ),
      upsertLive: db.prepare(
        'INSERT INTO live (resource, namespace, name, rev) VALUES (?, ?, ?, ?) ' +
          'ON CONFLICT (resource, namespace, name) DO UPDATE SET rev = excluded.rev',
      ),
      deleteLive: db.prepare('DELETE FROM live WHERE resource = ? AND namespace = ? AND name = ?'),
      getLive: db.prepare(
        'SELECT log.rev AS rev, log.value AS value FROM live JOIN log ON log.rev = live.rev ' +
          'WHERE live.resource = ? AND live.namespace = ? AND live.name = ?',
      ),
      listLiveAll: db.prepare(
        'SELECT live.namespace AS namespace, live.name AS name, log.rev AS rev, log.value AS value ' +
          'FROM live JOIN log ON log.rev = live.rev WHERE live.resource = ? ' +
          'AND (live.namespace, live.name) > (?, ?) ORDER BY live.namespace, live.name LIMIT ?',
      ),
      listLiveNs: db.prepare(
        'SELECT live.namespace AS namespace, live.name AS name, log.rev AS rev, log.value AS value ' +
          'FROM live JOIN log ON log.rev = live.rev WHERE live.resource = ? AND live.namespace = ? ' +
          'AND live.name > ? ORDER BY live.name LIMIT ?',
      ),
      listAtAll: db.prepare(
        `SELECT l.namespace AS namespace, l.name AS name, l.rev AS rev, l.value AS value, l.op AS op FROM log l
         WHERE l.resource = ? AND (l.namespace, l.name) > (?, ?) AND l.rev = (
           SELECT MAX(rev) FROM log m WHERE m.resource = l.resource AND m.namespace = l.namespace
             AND m.name = l.name AND m.rev <= ?)
         ORDER BY l.namespace, l.name LIMIT ?`,
      ),
      listAtNs: db.prepare(
        `SELECT l.namespace AS namespace, l.name AS name, l.rev AS rev, l.value AS value, l.op AS op FROM log l
         WHERE l.resource = ? AND l.namespace = ? AND l.name > ? AND l.rev = (
           SELECT MAX(rev) FROM log m WHERE m.resource = l.resource AND m.namespace = l.namespace
             AND m.name = l.name AND m.rev <= ?)
         ORDER BY l.name LIMIT ?`,
      ),
      countLive: db.prepare('SELECT COUNT(*) AS n FROM live WHERE resource = ?'),
      countLiveNs: db.prepare('SELECT COUNT(*) AS n FROM live WHERE resource = ? AND namespace = ?'),
      since: db.prepare(
        'SELECT rev, namespace, name, op, prev_rev, value FROM log WHERE rev > ? AND resource = ? ORDER BY rev',
      ),
      byRev: db.prepare('SELECT value FROM log WHERE rev = ?'),
      maxRev: db.prepare('SELECT MAX(rev) AS rev FROM log'),
      getMeta: db.prepare('SELECT value FROM meta WHERE key = ?'),
      setMeta: db.prepare(
        'INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value',
      ),
      compactSuperseded: db.prepare(
        'DELETE FROM log WHERE rev IN (SELECT prev_rev FROM log WHERE rev <= ? AND prev_rev IS NOT NULL)',
      ),
      compactDeletes: db.prepare('DELETE FROM log WHERE rev <= ? AND op = 3'),
    };
    this.compacted = (this.stmts.getMeta.get('compact_rev') as { value: number } | undefined)?.value ?? 0;
    const max = (this.stmts.maxRev.get() as { rev: number | null }).rev ?? 0;
    this.rev = Math.max(max, this.compacted);
  }

  /** The newest revision: the resourceVersion of the last write. */
  get revision(): number {
    return this.rev;
  }

  /** History up to this revision is folded; watches and exact lists must start at or after it. */
  get compactRevision(): number {
    return this.compacted;
  }

  get(resource: string, namespace: string, name: string): StoredObject | undefined {
    const row = this.stmts.getLive.get(resource, namespace, name) as
      { rev: number; value: StoredValue } | undefined;
    return row ? { rev: row.rev, object: this.decode(resource, namespace, name, row.value) } : undefined;
  }

  /**
   * One page of the objects of `resource` (in `namespace`, or all namespaces when undefined), in key order
   * after `after`, at the newest revision or at `atRevision` (which must not be compacted).
   */
  list(
    resource: string,
    namespace: string | undefined,
    options: { after?: { namespace: string; name: string }; limit?: number; atRevision?: number } = {},
  ): ListPage {
    const limit = options.limit && options.limit > 0 ? options.limit : -1;
    const at = options.atRevision;
    const after = options.after ?? { namespace: '', name: '' };
    let rows: (LogRow & { op?: number })[];
    if (at === undefined || at >= this.rev) {
      rows = (
        namespace === undefined
          ? this.stmts.listLiveAll.all(resource, after.namespace, after.name, limit)
          : this.stmts.listLiveNs.all(resource, namespace, after.name, limit)
      ) as LogRow[];
    } else {
      this.checkRevision(at);
      rows = (
        namespace === undefined
          ? this.stmts.listAtAll.all(resource, after.namespace, after.name, at, limit)
          : this.stmts.listAtNs.all(resource, namespace, after.name, at, limit)
      ) as LogRow[];
    }
    const items: StoredObject[] = [];
    for (const row of rows) {
      if (row.op === opCode.delete) continue;
      items.push({ rev: row.rev, object: this.decode(resource, row.namespace, row.name, row.value) });
    }
    const last = rows[rows.length - 1];
    return {
      items,
      ...(limit > 0 && rows.length === limit && last
        ? { next: { namespace: last.namespace, name: last.name } }
        : {}),
    };
  }

  /** Every object of `resource` (in `namespace` when given), at the newest revision. */
  listAll(resource: string, namespace?: string): StoredObject[] {
    return this.list(resource, namespace).items;
  }

  count(resource: string, namespace?: string): number {
    const row = (
      namespace === undefined
        ? this.stmts.countLive.get(resource)
        : this.stmts.countLiveNs.get(resource, namespace)
    ) as { n: number };
    return row.n;
  }

  /**
   * Writes a new object. `build` receives the revision the write will have and returns the object to store;
   * the store sets its resourceVersion to that revision.
   */
  create(
    resource: string,
    namespace: string,
    name: string,
    build: (rev: number) => KubeObject,
  ): StoredObject {
    if (this.stmts.getLive.get(resource, namespace, name)) {
      throw new StoreError('AlreadyExists', `${resource} "${name}" already exists`);
    }
    return this.write('create', resource, namespace, name, null, undefined, build);
  }

  /**
   * Replaces an object. `expectedRev`, when given, must be the current revision of the object (optimistic
   * concurrency); `build` receives the current object and the new revision.
   */
  update(
    resource: string,
    namespace: string,
    name: string,
    build: (current: KubeObject, rev: number) => KubeObject,
    expectedRev?: number,
  ): StoredObject {
    const current = this.mustGet(resource, namespace, name, expectedRev);
    return this.write('update', resource, namespace, name, current.rev, current.object, (rev) =>
      build(structuredClone(current.object), rev),
    );
  }

  /** Removes an object; the deletion row carries its last state stamped with the deletion's revision. */
  delete(
    resource: string,
    namespace: string,
    name: string,
    expectedRev?: number,
    finalState?: (current: KubeObject, rev: number) => KubeObject,
  ): StoredObject {
    const current = this.mustGet(resource, namespace, name, expectedRev);
    return this.write('delete', resource, namespace, name, current.rev, current.object, (rev) => {
      return finalState ? finalState(structuredClone(current.object), rev) : structuredClone(current.object);
    });
  }

  private mustGet(resource: string, namespace: string, name: string, expectedRev?: number): StoredObject {
    const row = this.stmts.getLive.get(resource, namespace, name) as
      { rev: number; value: StoredValue } | undefined;
    if (!row) throw new StoreError('NotFound', `${resource} "${name}" not found`);
    if (expectedRev !== undefined && expectedRev !== row.rev) {
      throw new StoreError(
        'Conflict',
        `Operation cannot be fulfilled on ${resource} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
      );
    }
    return { rev: row.rev, object: this.decode(resource, namespace, name, row.value) };
  }

  private write(
    op: StoreOp,
    resource: string,
    namespace: string,
    name: string,
    prevRev: number | null,
    prev: KubeObject | undefined,
    build: (rev: number) => KubeObject,
  ): StoredObject {
    const rev = this.rev + 1;
    const object = build(rev);
    object.metadata = { ...object.metadata, resourceVersion: String(rev) };
    const json = JSON.stringify(object);
    this.db.transaction(() => {
      const value = this.values.toStorage(resource, namespace, name, json);
      this.stmts.insertLog.run(rev, resource, namespace, name, opCode[op], prevRev, value);
      if (op === 'delete') this.stmts.deleteLive.run(resource, namespace, name);
      else this.stmts.upsertLive.run(resource, namespace, name, rev);
    })();
    this.rev = rev;
    this.notify({ op, resource, namespace, name, rev, object, ...(prev ? { prev } : {}), json });
    return { rev, object };
  }

  /** Subscribes to every later write of `resource`. Returns the unsubscribe function. */
  subscribe(resource: string, listener: StoreListener): () => void {
    let set = this.listeners.get(resource);
    if (!set) this.listeners.set(resource, (set = new Set()));
    set.add(listener);
    return () => void set.delete(listener);
  }

  /**
   * The writes of `resource` after revision `from`, from the log. Throws `Compacted` when `from` is older
   * than the compaction revision (the client must list again: 410 Gone).
   */
  eventsSince(resource: string, from: number): StoreEvent[] {
    this.checkRevision(from);
    const rows = this.stmts.since.all(from, resource) as LogRow[];
    return rows.map((row) => {
      const op = opName[row.op]!;
      let prev: KubeObject | undefined;
      if (row.prev_rev !== null) {
        const p = this.stmts.byRev.get(row.prev_rev) as { value: StoredValue } | undefined;
        if (p) prev = this.decode(resource, row.namespace, row.name, p.value);
      }
      const json = this.values.fromStorage(resource, row.namespace, row.name, row.value);
      return {
        op,
        resource,
        namespace: row.namespace,
        name: row.name,
        rev: row.rev,
        object: JSON.parse(json),
        ...(prev ? { prev } : {}),
        json,
      };
    });
  }

  /**
   * Whether the current value of an object was written otherwise than a write would now (under an old
   * key, or before encryption was turned on): an update that changes nothing still rewrites it then, as
   * upstream, so rewriting every Secret moves them all to the new key.
   */
  isStale(resource: string, namespace: string, name: string): boolean {
    const row = this.stmts.getLive.get(resource, namespace, name) as { value: StoredValue } | undefined;
    if (!row) return false;
    return this.values.isStale(resource, row.value);
  }

  private decode(resource: string, namespace: string, name: string, value: StoredValue): KubeObject {
    return JSON.parse(this.values.fromStorage(resource, namespace, name, value)) as KubeObject;
  }

  private checkRevision(rev: number): void {
    if (rev < this.compacted) {
      throw new StoreError('Compacted', `too old resource version: ${rev} (${this.compacted})`);
    }
    if (rev > this.rev) {
      throw new StoreError('FutureRevision', `Too large resource version: ${rev}, current: ${this.rev}`);
    }
  }

  /** Folds history up to `rev` (at most the newest revision). Returns the number of rows removed. */
  compact(rev: number): number {
    const target = Math.min(rev, this.rev);
    if (target <= this.compacted) return 0;
    let removed = 0;
    this.db.transaction(() => {
      removed += this.stmts.compactSuperseded.run(target).changes;
      removed += this.stmts.compactDeletes.run(target).changes;
      this.stmts.setMeta.run('compact_rev', target);
    })();
    this.compacted = target;
    return removed;
  }

  /** Rows in the log (for tests and metrics). */
  logSize(): number {
    return (this.db.prepare('SELECT COUNT(*) AS n FROM log').get() as { n: number }).n;
  }

  close(): void {
    this.listeners.clear();
    if (this.db.open) this.db.close();
  }

  private notify(event: StoreEvent): void {
    const set = this.listeners.get(event.resource);
    if (!set) return;
    for (const listener of [...set]) {
      try {
        listener(event);
      } catch (err) {
        // The write is committed; one failing watcher must not fail it or starve the others.
        this.onListenerError(err);
      }
    }
  }
}
