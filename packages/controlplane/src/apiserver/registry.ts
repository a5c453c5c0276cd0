import { randomBytes, randomUUID } from 'node:crypto';
import { canonicalJson, type FieldError } from '@nodelet/api';
import type { Clock } from '@nodelet/kernel';
import { isObject, rfc3339, type KubeObject } from '../object.js';
import { RevisionStore, StoreError, type StoreEvent, type StoredObject } from '../storage/revision-store.js';
import { decodeObject, type FieldValidation, type KindIndex } from './decode.js';
import { applyJsonPatch, applyMergePatch, applyStrategicMergePatch, type PatchType } from './patch.js';
import {
  apiVersionOf,
  groupResource,
  type RequestUser,
  type ResourceType,
  type StrategyContext,
} from './resource-type.js';
import {
  matchFields,
  matchLabels,
  parseFieldSelector,
  parseLabelSelector,
  type FieldSelector,
  type LabelSelector,
} from './selectors.js';
import {
  alreadyExists,
  ApiError,
  badRequest,
  conflict,
  expired,
  forbidden,
  invalid,
  notFound,
  staleObject,
  successStatus,
  type Status,
} from './status.js';

/**
 * The generic REST logic every served resource shares (upstream's registry/generic/registry.Store and
 * the request handlers around it): create, get, list, update, patch, delete and watch over the revision
 * store, with resourceVersion semantics, optimistic concurrency, preconditions, graceful deletion,
 * finalizers, selectors and paging. Kind-specific behaviour comes from each ResourceType's strategy.
 *
 * Everything between reading the current object and writing the new one is synchronous, so two
 * requests never interleave inside a read-modify-write.
 */
export interface ListOptions {
  labelSelector?: string | undefined;
  fieldSelector?: string | undefined;
  limit?: number | undefined;
  continue?: string | undefined;
  resourceVersion?: string | undefined;
  resourceVersionMatch?: string | undefined;
}

export interface WatchOptions extends ListOptions {
  allowWatchBookmarks?: boolean | undefined;
  sendInitialEvents?: boolean | undefined;
}

export interface WriteOptions {
  dryRun?: boolean;
  fieldValidation?: FieldValidation;
  /** Who asks (strategies that record the requestor use it: CertificateSigningRequests). */
  user?: RequestUser;
}

export interface DeleteOptions {
  gracePeriodSeconds?: number | undefined;
  preconditions?: { uid?: string | undefined; resourceVersion?: string | undefined } | undefined;
  dryRun?: boolean | undefined;
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

/** Where a watch delivers its events. `json` is the object already serialized, when nothing converted it. */
export interface WatchSink {
  send(type: WatchEventType, object: KubeObject, json?: string): void;
  /** The watch cannot go on (its start was compacted): the sink sends `status` as an ERROR event and ends. */
  fail(status: Status): void;
}

export interface Watch {
  stop(): void;
}

export interface WriteResult {
  object: KubeObject;
  warnings: string[];
}

export interface DeleteResult {
  /** The deleted object, the object marked for deletion, or a Success Status. */
  body: KubeObject | Status;
  /** false while a graceful deletion or finalizers hold the object. */
  deleted: boolean;
}

export interface RegistryOptions {
  store: RevisionStore;
  clock: Clock;
  types: readonly ResourceType[];
  /** How often watches that asked for bookmarks get one (ms). */
  bookmarkIntervalMs?: number;
}

const initialEventsEnd = 'k8s.io/initial-events-end';

export class Registry implements KindIndex {
  readonly store: RevisionStore;
  readonly types: readonly ResourceType[];
  private readonly clock: Clock;
  private readonly bookmarkIntervalMs: number;
  readonly context: StrategyContext;

  constructor(options: RegistryOptions) {
    this.store = options.store;
    this.clock = options.clock;
    this.types = options.types;
    this.bookmarkIntervalMs = options.bookmarkIntervalMs ?? 60_000;
    this.context = {
      now: () => this.clock.now(),
      lookup: (resource, namespace, name) => this.store.get(resource, namespace, name)?.object,
      list: (resource, namespace) => this.store.listAll(resource, namespace).map((s) => s.object),
    };
  }

  has(apiVersion: string, kind: string): boolean {
    return this.types.some((t) => apiVersionOf(t) === apiVersion && t.kind === kind) || kind === 'Binding';
  }

  /** The resource type served at group/version/plural. */
  find(group: string, version: string, plural: string): ResourceType | undefined {
    return this.types.find((t) => t.group === group && t.version === version && t.plural === plural);
  }

  /** The preferred type of a storage resource (core Events over events.k8s.io). */
  byStorage(storage: string): ResourceType {
    const t = this.types.find((x) => x.storage === storage);
    if (!t) throw new Error(`no resource type stores '${storage}'`);
    return t;
  }

  // ----- reads ----------------------------------------------------------------------------------------

  get(t: ResourceType, namespace: string, name: string): KubeObject {
    const stored = this.store.get(t.storage, ns(t, namespace), name);
    if (!stored) throw notFound(groupResource(t), name);
    return this.out(t, stored.object);
  }

  list(t: ResourceType, namespace: string | undefined, options: ListOptions = {}): KubeObject {
    const labels = parseLabelSelector(options.labelSelector);
    const fields = this.parseFields(t, options.fieldSelector);
    const limit = options.limit && options.limit > 0 ? options.limit : undefined;
    let at: number | undefined;
    let after: { namespace: string; name: string } | undefined;
    if (options.continue) {
      const token = decodeContinue(options.continue);
      at = token.rev;
      after = { namespace: token.namespace, name: token.name };
      if (at < this.store.compactRevision) {
        throw expired(
          `The provided continue parameter is too old to display a consistent list result (its revision ${at} was compacted). List again without continue.`,
        );
      }
    } else {
      at = this.listRevision(options);
    }
    const revision = at ?? this.store.revision;
    const items: KubeObject[] = [];
    let next: { namespace: string; name: string } | undefined;
    const scope = t.namespaced ? namespace : undefined;
    // Read in batches until the page is full: selectors filter after the read.
    const batch = limit ? Math.max(limit, 100) : undefined;
    for (let guard = 0; guard < 1_000_000; guard++) {
      const page = this.store.list(t.storage, scope, {
        ...(after ? { after } : {}),
        ...(batch ? { limit: batch } : {}),
        ...(at !== undefined && at < this.store.revision ? { atRevision: at } : {}),
      });
      let cut = false;
      for (const item of page.items) {
        if (!this.matches(t, item.object, labels, fields)) continue;
        items.push(this.out(t, item.object, true));
        if (limit && items.length === limit) {
          next = { namespace: item.object.metadata.namespace ?? '', name: item.object.metadata.name! };
          cut = true;
          break;
        }
      }
      if (cut || !page.next) {
        if (cut && !page.next && next) {
          // The page ended exactly at the last item read; more may follow only if the batch was full.
          const rest = this.store.list(t.storage, scope, {
            after: next,
            limit: 1,
            ...(at !== undefined && at < this.store.revision ? { atRevision: at } : {}),
          });
          if (rest.items.length === 0 && !rest.next) next = undefined;
        }
        break;
      }
      after = page.next;
    }
    const metadata: Record<string, unknown> = { resourceVersion: String(revision) };
    if (next) metadata.continue = encodeContinue(revision, next.namespace, next.name);
    return { apiVersion: apiVersionOf(t), kind: t.listKind, metadata, items };
  }

  /** The revision a list (without continue) reads at: undefined for the newest. */
  private listRevision(options: ListOptions): number | undefined {
    const rv = options.resourceVersion;
    const match = options.resourceVersionMatch;
    if (match && match !== 'Exact' && match !== 'NotOlderThan') {
      throw badRequest(
        `resourceVersionMatch: Unsupported value: "${match}": supported values: "Exact", "NotOlderThan"`,
      );
    }
    if (match && (rv === undefined || rv === '')) {
      throw badRequest('resourceVersionMatch is forbidden unless resourceVersion is provided');
    }
    if (rv === undefined || rv === '' || rv === '0') {
      if (match === 'Exact' && rv === '0')
        throw badRequest('resourceVersionMatch "Exact" is forbidden for resourceVersion "0"');
      return undefined;
    }
    const n = parseRevision(rv);
    if (n > this.store.revision) {
      throw new ApiError(
        504,
        'Timeout',
        `Too large resource version: ${n}, current: ${this.store.revision}`,
        {
          causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }],
          retryAfterSeconds: 1,
        },
      );
    }
    if (match === 'Exact') {
      if (n < this.store.compactRevision)
        throw expired(`too old resource version: ${n} (${this.store.compactRevision})`);
      return n;
    }
    return undefined;
  }

  private parseFields(t: ResourceType, text: string | undefined): FieldSelector {
    const selector = parseFieldSelector(text);
    for (const r of selector) {
      if (r.field !== 'metadata.name' && r.field !== 'metadata.namespace' && !t.fields[r.field]) {
        throw badRequest(
          `"${r.field}" is not a known field selector: only "metadata.name", "metadata.namespace"${Object.keys(
            t.fields,
          )
            .map((f) => `, "${f}"`)
            .join('')}`,
        );
      }
    }
    return selector;
  }

  private matches(
    t: ResourceType,
    stored: KubeObject,
    labels: LabelSelector,
    fields: FieldSelector,
  ): boolean {
    if (labels.length > 0 && !matchLabels(labels, stored.metadata.labels)) return false;
    if (fields.length === 0) return true;
    return matchFields(fields, (field) => {
      if (field === 'metadata.name') return stored.metadata.name;
      if (field === 'metadata.namespace') return stored.metadata.namespace ?? '';
      return t.fields[field]?.(stored);
    });
  }

  /** A stored object as `t`'s API version shows it; list items carry no apiVersion/kind. */
  private out(t: ResourceType, stored: KubeObject, listItem = false): KubeObject {
    const obj = t.fromStorage ? t.fromStorage(stored) : stored;
    if (listItem) {
      const { apiVersion: _a, kind: _k, ...rest } = obj;
      return rest as KubeObject;
    }
    return obj;
  }

  // ----- create ---------------------------------------------------------------------------------------

  create(t: ResourceType, namespace: string, body: unknown, options: WriteOptions = {}): WriteResult {
    const { object, warnings } = decodeObject(body, t, options.fieldValidation ?? 'Warn', this);
    const obj = t.toStorage ? t.toStorage(object) : object;
    const meta = obj.metadata;
    if (t.namespaced) {
      if (meta.namespace && namespace && meta.namespace !== namespace) {
        throw badRequest(
          'the namespace of the provided object does not match the namespace sent on the request',
        );
      }
      meta.namespace = namespace || meta.namespace;
    } else {
      delete meta.namespace;
    }
    if (meta.resourceVersion) throw badRequest('resourceVersion should not be set on objects to be created');
    if (!meta.name && typeof meta.generateName === 'string' && meta.generateName) {
      meta.name = meta.generateName + randomSuffix();
    }
    if (t.namespaced && meta.namespace) this.checkNamespaceOpen(t, meta.namespace, meta.name ?? '');
    meta.uid = randomUUID();
    meta.creationTimestamp = rfc3339(this.clock.now());
    delete meta.deletionTimestamp;
    delete meta.deletionGracePeriodSeconds;
    delete meta.selfLink;
    delete meta.managedFields;
    t.strategy.prepareForCreate?.(obj, this.context, options.user);
    this.mustBeValid(t, obj, t.strategy.validate?.(obj, this.context) ?? []);
    if (options.dryRun) return { object: this.out(t, obj), warnings };
    try {
      const stored = this.store.create(t.storage, meta.namespace ?? '', meta.name!, () => obj);
      return { object: this.out(t, stored.object), warnings };
    } catch (err) {
      throw this.translate(t, err, meta.name!);
    }
  }

  /** Upstream's NamespaceLifecycle admission: no content in a missing or terminating namespace. */
  private checkNamespaceOpen(t: ResourceType, namespace: string, name: string): void {
    const nsObj = this.store.get('namespaces', '', namespace)?.object;
    if (!nsObj) throw notFound({ group: '', resource: 'namespaces' }, namespace);
    if (nsObj.metadata.deletionTimestamp || nsObj.status?.phase === 'Terminating') {
      throw forbidden(
        groupResource(t),
        name,
        `unable to create new content in namespace ${namespace} because it is being terminated`,
      );
    }
  }

  private mustBeValid(t: ResourceType, obj: KubeObject, errors: FieldError[]): void {
    if (errors.length > 0) throw invalid(t.kind, t.group, obj.metadata.name ?? '', errors);
  }

  // ----- update and patch -----------------------------------------------------------------------------

  /** PUT of the main resource or of its `status` subresource. */
  update(
    t: ResourceType,
    namespace: string,
    name: string,
    body: unknown,
    options: WriteOptions & { subresource?: string } = {},
  ): WriteResult {
    const { object, warnings } = decodeObject(body, t, options.fieldValidation ?? 'Warn', this);
    const obj = t.toStorage ? t.toStorage(object) : object;
    if (obj.metadata.name && obj.metadata.name !== name) {
      throw badRequest(
        `the name of the object (${obj.metadata.name}) does not match the name on the URL (${name})`,
      );
    }
    if (t.namespaced && obj.metadata.namespace && obj.metadata.namespace !== ns(t, namespace)) {
      throw badRequest(
        'the namespace of the provided object does not match the namespace sent on the request',
      );
    }
    return { object: this.replace(t, namespace, name, obj, options), warnings };
  }

  /** Applies a patch to the current object, then stores it as an update would. */
  patch(
    t: ResourceType,
    namespace: string,
    name: string,
    type: PatchType,
    patch: unknown,
    options: WriteOptions & { subresource?: string } = {},
  ): WriteResult {
    if (type === 'apply') {
      throw new ApiError(
        415,
        'UnsupportedMediaType',
        'server-side apply (application/apply-patch+yaml) is not supported by this server; use client-side kubectl apply',
      );
    }
    const current = this.store.get(t.storage, ns(t, namespace), name);
    if (!current) throw notFound(groupResource(t), name);
    const versioned = this.out(t, current.object);
    let patched: unknown;
    switch (type) {
      case 'json':
        patched = applyJsonPatch(versioned, patch);
        break;
      case 'merge':
        patched = applyMergePatch(versioned, patch);
        break;
      case 'strategic':
        patched = applyStrategicMergePatch(versioned, patch, t.model);
        break;
    }
    if (isObject(patched) && isObject(patched.metadata)) {
      // A patch that does not mention resourceVersion applies to whatever is current.
      if (patched.metadata.resourceVersion === undefined)
        patched.metadata.resourceVersion = String(current.rev);
    }
    const { object, warnings } = decodeObject(patched, t, options.fieldValidation ?? 'Warn', this);
    const obj = t.toStorage ? t.toStorage(object) : object;
    if (obj.metadata.name !== name)
      throw badRequest(
        `the name of the object (${obj.metadata.name}) does not match the name on the URL (${name})`,
      );
    return { object: this.replace(t, namespace, name, obj, options), warnings };
  }

  private replace(
    t: ResourceType,
    namespace: string,
    name: string,
    obj: KubeObject,
    options: WriteOptions & { subresource?: string },
  ): KubeObject {
    const key = ns(t, namespace);
    const current = this.store.get(t.storage, key, name);
    if (!current) throw notFound(groupResource(t), name);
    const old = current.object;
    const meta = obj.metadata;
    if (meta.resourceVersion !== undefined && meta.resourceVersion !== '') {
      if (parseRevisionOr(meta.resourceVersion) !== current.rev)
        throw conflict(groupResource(t), name, staleObject);
    }
    if (meta.uid && meta.uid !== old.metadata.uid) {
      throw conflict(
        groupResource(t),
        name,
        `Precondition failed: UID in precondition: ${meta.uid}, UID in object meta: ${old.metadata.uid}`,
      );
    }
    meta.name = name;
    if (t.namespaced) meta.namespace = key;
    else delete meta.namespace;
    meta.uid = old.metadata.uid;
    meta.creationTimestamp = old.metadata.creationTimestamp;
    copyOrDelete(meta, old.metadata, 'deletionTimestamp');
    copyOrDelete(meta, old.metadata, 'deletionGracePeriodSeconds');
    copyOrDelete(meta, old.metadata, 'generation');
    delete meta.managedFields;
    delete meta.selfLink;

    let next: KubeObject;
    let errors: FieldError[];
    if (options.subresource === 'status') {
      next = t.strategy.prepareForStatusUpdate
        ? t.strategy.prepareForStatusUpdate(obj, structuredClone(old), this.context)
        : { ...structuredClone(old), status: obj.status };
      next.metadata.resourceVersion = old.metadata.resourceVersion;
      errors = t.strategy.validateStatusUpdate?.(next, old, this.context) ?? [];
    } else if (options.subresource) {
      const sub = options.subresource;
      const prepared = t.strategy.prepareForSubresourceUpdate?.(sub, obj, structuredClone(old), this.context);
      if (!prepared) throw notFound(groupResource(t), `${name}/${sub}`);
      next = prepared;
      next.metadata.resourceVersion = old.metadata.resourceVersion;
      errors = t.strategy.validateSubresourceUpdate?.(sub, next, old, this.context) ?? [];
    } else {
      if (t.statusSubresource) obj.status = old.status;
      t.strategy.prepareForUpdate?.(obj, structuredClone(old), this.context);
      next = obj;
      errors =
        t.strategy.validateUpdate?.(next, old, this.context) ??
        t.strategy.validate?.(next, this.context) ??
        [];
    }
    this.mustBeValid(t, next, errors);
    next.metadata.resourceVersion = old.metadata.resourceVersion;
    if (canonicalJson(next) === canonicalJson(old)) return this.out(t, old);
    if (options.dryRun) return this.out(t, next);
    // An object being deleted goes once its last finalizer is removed (and no grace period runs).
    const finalizing =
      next.metadata.deletionTimestamp &&
      (next.metadata.finalizers ?? []).length === 0 &&
      !next.metadata.deletionGracePeriodSeconds;
    try {
      if (finalizing) {
        const removed = this.store.delete(t.storage, key, name, current.rev, () => next);
        return this.out(t, removed.object);
      }
      const stored = this.store.update(t.storage, key, name, () => next, current.rev);
      return this.out(t, stored.object);
    } catch (err) {
      throw this.translate(t, err, name);
    }
  }

  /** `pods/binding`: assigns a pending pod to a node (the scheduler's write). */
  bind(namespace: string, name: string, binding: unknown): Status {
    const pods = this.byStorage('pods');
    if (
      !isObject(binding) ||
      !isObject(binding.target) ||
      typeof binding.target.name !== 'string' ||
      !binding.target.name
    ) {
      throw invalid('Binding', '', name, [{ field: 'target.name', message: 'Required value' }]);
    }
    const node = binding.target.name as string;
    const uid = isObject(binding.metadata) ? binding.metadata.uid : undefined;
    const current = this.store.get('pods', namespace, name);
    if (!current) throw notFound(groupResource(pods), name);
    const pod = current.object;
    if (uid && uid !== pod.metadata.uid) {
      throw conflict(
        groupResource(pods),
        name,
        `Precondition failed: UID in precondition: ${uid}, UID in object meta: ${pod.metadata.uid}`,
      );
    }
    if (pod.metadata.deletionTimestamp) {
      throw conflict(groupResource(pods), name, 'pod is being deleted, cannot be assigned to a host');
    }
    if (pod.spec?.nodeName) {
      throw conflict(
        groupResource(pods),
        name,
        `pod ${name} is already assigned to node "${pod.spec.nodeName}"`,
      );
    }
    const now = rfc3339(this.clock.now());
    this.store.update(
      'pods',
      namespace,
      name,
      (p) => {
        p.spec.nodeName = node;
        const conditions: Record<string, any>[] = (p.status?.conditions ?? []).filter(
          (c: any) => c.type !== 'PodScheduled',
        );
        conditions.push({
          type: 'PodScheduled',
          status: 'True',
          lastProbeTime: null,
          lastTransitionTime: now,
        });
        p.status = { ...(p.status ?? {}), conditions };
        return p;
      },
      current.rev,
    );
    return { ...successStatus(), code: 201 };
  }

  // ----- delete ---------------------------------------------------------------------------------------

  delete(t: ResourceType, namespace: string, name: string, options: DeleteOptions = {}): DeleteResult {
    const key = ns(t, namespace);
    const current = this.store.get(t.storage, key, name);
    if (!current) throw notFound(groupResource(t), name);
    const obj = current.object;
    const pre = options.preconditions;
    if (pre?.uid && pre.uid !== obj.metadata.uid) {
      throw conflict(
        groupResource(t),
        name,
        `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${obj.metadata.uid}`,
      );
    }
    if (pre?.resourceVersion && parseRevisionOr(pre.resourceVersion) !== current.rev) {
      throw conflict(
        groupResource(t),
        name,
        `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${current.rev}`,
      );
    }
    if (options.gracePeriodSeconds !== undefined && options.gracePeriodSeconds < 0) {
      throw invalid('DeleteOptions', 'meta.k8s.io', '', [
        {
          field: 'gracePeriodSeconds',
          message: `Invalid value: ${options.gracePeriodSeconds}: must be greater than or equal to 0`,
        },
      ]);
    }
    if (t.storage === 'namespaces') return this.deleteNamespace(t, obj, current.rev, options);

    const grace = t.strategy.gracePeriodSeconds?.(obj, options.gracePeriodSeconds) ?? 0;
    const finalizers = (obj.metadata.finalizers ?? []).length > 0;
    if (grace > 0 || finalizers) {
      // Graceful deletion or finalizers: the object stays, marked, until its node or its finalizers let go.
      const existing = obj.metadata.deletionGracePeriodSeconds;
      if (obj.metadata.deletionTimestamp && existing !== undefined && grace >= existing) {
        return { body: this.out(t, obj), deleted: false }; // a second delete may only shorten the grace
      }
      if (options.dryRun) return { body: this.out(t, obj), deleted: false };
      const now = this.clock.now();
      const stored = this.store.update(
        t.storage,
        key,
        name,
        (o) => {
          o.metadata.deletionTimestamp = rfc3339(now + grace * 1000);
          o.metadata.deletionGracePeriodSeconds = grace;
          return o;
        },
        current.rev,
      );
      return { body: this.out(t, stored.object), deleted: false };
    }
    if (options.dryRun) return { body: this.deletedBody(t, obj), deleted: true };
    const removed = this.store.delete(t.storage, key, name, current.rev);
    return { body: this.deletedBody(t, removed.object), deleted: true };
  }

  private deletedBody(t: ResourceType, obj: KubeObject): KubeObject | Status {
    if (t.returnDeletedObject) return this.out(t, obj);
    return successStatus({
      name: obj.metadata.name!,
      ...(t.group ? { group: t.group } : {}),
      kind: t.plural,
      uid: obj.metadata.uid!,
    });
  }

  /** Namespaces terminate: marked now, removed by the namespace controller once empty. */
  private deleteNamespace(
    t: ResourceType,
    obj: KubeObject,
    rev: number,
    options: DeleteOptions,
  ): DeleteResult {
    const name = obj.metadata.name!;
    if (['default', 'kube-system', 'kube-public'].includes(name)) {
      throw forbidden(groupResource(t), name, 'this namespace may not be deleted');
    }
    if (obj.metadata.deletionTimestamp || options.dryRun) return { body: this.out(t, obj), deleted: false };
    const stored = this.store.update(
      'namespaces',
      '',
      name,
      (o) => {
        o.metadata.deletionTimestamp = rfc3339(this.clock.now());
        o.metadata.deletionGracePeriodSeconds = 0;
        o.status = { ...(o.status ?? {}), phase: 'Terminating' };
        return o;
      },
      rev,
    );
    return { body: this.out(t, stored.object), deleted: false };
  }

  deleteCollection(
    t: ResourceType,
    namespace: string | undefined,
    list: ListOptions,
    options: DeleteOptions,
  ): KubeObject {
    const { items } = this.list(t, namespace, { ...list, limit: undefined, continue: undefined });
    const deleted: KubeObject[] = [];
    for (const item of items as KubeObject[]) {
      try {
        const r = this.delete(t, item.metadata.namespace ?? '', item.metadata.name!, options);
        if (isObject(r.body) && (r.body as KubeObject).metadata?.name) deleted.push(r.body as KubeObject);
        else deleted.push(item);
      } catch (err) {
        if (!(err instanceof ApiError && err.code === 404)) throw err;
      }
    }
    return {
      apiVersion: apiVersionOf(t),
      kind: t.listKind,
      metadata: { resourceVersion: String(this.store.revision) },
      items: deleted,
    };
  }

  /** Removes an object at once, whatever its grace period or finalizers (controllers finishing a deletion). */
  forceRemove(storage: string, namespace: string, name: string): void {
    try {
      this.store.delete(storage, namespace, name);
    } catch (err) {
      if (!(err instanceof StoreError && err.code === 'NotFound')) throw err;
    }
  }

  // ----- watch ----------------------------------------------------------------------------------------

  watch(t: ResourceType, namespace: string | undefined, options: WatchOptions, sink: WatchSink): Watch {
    const labels = parseLabelSelector(options.labelSelector);
    const fields = this.parseFields(t, options.fieldSelector);
    const scope = t.namespaced ? namespace : undefined;
    const rv = options.resourceVersion;
    const bookmarks = options.allowWatchBookmarks === true;
    let stopped = false;
    let lastRev = this.store.revision;

    const deliver = (e: StoreEvent) => {
      if (stopped) return;
      if (scope !== undefined && e.namespace !== scope) return;
      lastRev = e.rev;
      const now = e.op === 'delete' ? false : this.matches(t, e.object, labels, fields);
      const before = e.op === 'create' ? false : e.prev ? this.matches(t, e.prev, labels, fields) : now;
      let type: WatchEventType | undefined;
      if (e.op === 'create') type = now ? 'ADDED' : undefined;
      else if (e.op === 'update')
        type = now && before ? 'MODIFIED' : now ? 'ADDED' : before ? 'DELETED' : undefined;
      else type = before || this.matches(t, e.object, labels, fields) ? 'DELETED' : undefined;
      if (!type) return;
      if (t.fromStorage) sink.send(type, t.fromStorage(e.object));
      else sink.send(type, e.object, e.json);
    };

    let backlog: StoreEvent[] = [];
    const initial: StoredObject[] = [];
    const sendInitial = options.sendInitialEvents === true || rv === undefined || rv === '' || rv === '0';
    if (
      options.sendInitialEvents === true &&
      !(bookmarks && options.resourceVersionMatch === 'NotOlderThan')
    ) {
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
        ...this.store.listAll(t.storage, scope).filter((s) => this.matches(t, s.object, labels, fields)),
      );
    } else if (rv !== undefined && rv !== '' && rv !== '0') {
      const from = parseRevision(rv);
      try {
        backlog = this.store.eventsSince(t.storage, Math.min(from, this.store.revision));
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
    const unsubscribe = this.store.subscribe(t.storage, deliver);
    for (const item of initial) {
      if (t.fromStorage) sink.send('ADDED', t.fromStorage(item.object));
      else sink.send('ADDED', item.object);
    }
    if (options.sendInitialEvents === true) {
      sink.send('BOOKMARK', this.bookmark(t, this.store.revision, true));
    }
    for (const e of backlog) deliver(e);
    let cancelTimer = () => {};
    if (bookmarks) {
      const tick = () => {
        if (stopped) return;
        sink.send('BOOKMARK', this.bookmark(t, Math.max(lastRev, this.store.revision)));
        cancelTimer = this.clock.setTimeout(tick, this.bookmarkIntervalMs);
      };
      cancelTimer = this.clock.setTimeout(tick, this.bookmarkIntervalMs);
    }
    return {
      stop: () => {
        if (stopped) return;
        stopped = true;
        unsubscribe();
        cancelTimer();
      },
    };
  }

  private bookmark(t: ResourceType, rev: number, initialEnd = false): KubeObject {
    return {
      apiVersion: apiVersionOf(t),
      kind: t.kind,
      metadata: {
        resourceVersion: String(rev),
        ...(initialEnd ? { annotations: { [initialEventsEnd]: 'true' } } : {}),
      },
    };
  }

  // ----- helpers --------------------------------------------------------------------------------------

  private translate(t: ResourceType, err: unknown, name: string): unknown {
    if (!(err instanceof StoreError)) return err;
    switch (err.code) {
      case 'AlreadyExists':
        return alreadyExists(groupResource(t), name);
      case 'NotFound':
        return notFound(groupResource(t), name);
      case 'Conflict':
        return conflict(groupResource(t), name, staleObject);
      case 'Compacted':
        return expired(err.message);
      default:
        return err;
    }
  }
}

function ns(t: ResourceType, namespace: string | undefined): string {
  return t.namespaced ? (namespace ?? '') : '';
}

function copyOrDelete(target: Record<string, any>, source: Record<string, any>, key: string): void {
  if (source[key] === undefined) delete target[key];
  else target[key] = source[key];
}

const suffixAlphabet = 'bcdfghjklmnpqrstvwxz2456789';

/** Five characters from upstream's generateName alphabet (no vowels, no ambiguous digits). */
export function randomSuffix(length = 5): string {
  const bytes = randomBytes(length);
  let out = '';
  for (let i = 0; i < length; i++) out += suffixAlphabet[bytes[i]! % suffixAlphabet.length];
  return out;
}

export function parseRevision(rv: string): number {
  if (!/^\d+$/.test(rv))
    throw badRequest(`resourceVersion: Invalid value: "${rv}": must be a non-negative integer`);
  return Number(rv);
}

function parseRevisionOr(rv: string): number {
  return /^\d+$/.test(rv) ? Number(rv) : NaN;
}

interface ContinueToken {
  rev: number;
  namespace: string;
  name: string;
}

function encodeContinue(rev: number, namespace: string, name: string): string {
  return Buffer.from(JSON.stringify({ v: 'meta.k8s.io/v1', rv: rev, start: [namespace, name] })).toString(
    'base64url',
  );
}

function decodeContinue(token: string): ContinueToken {
  try {
    const data = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
    if (data.v === 'meta.k8s.io/v1' && Number.isInteger(data.rv) && Array.isArray(data.start)) {
      return { rev: data.rv, namespace: String(data.start[0]), name: String(data.start[1]) };
    }
  } catch {
    // fall through
  }
  throw badRequest('continue key is not valid: the token is malformed; list again without continue');
}
