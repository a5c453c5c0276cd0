import type { Clock } from '@nodelet/kernel';
import type { AdmissionPlugin } from '../admission/admission.js';
import type { KubeObject } from '../object.js';
import type { RevisionStore } from '../storage/revision-store.js';
import type { KindIndex } from './decode.js';
import type { PatchType } from './patch.js';
import { deleteCollection, deleteObject, forceRemove } from './registry-delete.js';
import { ns, toApi } from './registry-helpers.js';
import { listObjects } from './registry-list.js';
import type {
  DeleteOptions,
  DeleteResult,
  ListOptions,
  RegistryParts,
  Watch,
  WatchOptions,
  WatchSink,
  WriteOptions,
  WriteResult,
  SubresourceWriteOptions,
} from './registry-types.js';
import { watchObjects } from './registry-watch.js';
import { bindPod, createObject, patchObject, updateObject } from './registry-write.js';
import { apiVersionOf, groupResource, type ResourceType, type StrategyContext } from './resource-type.js';
import { notFound, type Status } from './status.js';

export * from './registry-types.js';
export { parseRevision, randomSuffix } from './registry-helpers.js';

export interface RegistryOptions {
  store: RevisionStore;
  clock: Clock;
  types: readonly ResourceType[];
  /** How often watches that asked for bookmarks get one (ms). */
  bookmarkIntervalMs?: number;
  /** Admission plugins run on every create (ServiceAccount, NodeRestriction). */
  admission?: readonly AdmissionPlugin[];
}

/**
 * The generic REST logic every served resource shares (upstream's registry/generic/registry.Store and
 * the request handlers around it): create, get, list, update, patch, delete and watch over the revision
 * store, with resourceVersion semantics, optimistic concurrency, preconditions, graceful deletion,
 * finalizers, selectors and paging. Kind-specific behaviour comes from each ResourceType's strategy.
 * Each operation lives in its module (registry-list, -write, -delete, -watch); this class binds them
 * to one store.
 *
 * Everything between reading the current object and writing the new one is synchronous, so two
 * requests never interleave inside a read-modify-write.
 */
export class Registry implements KindIndex {
  readonly store: RevisionStore;
  readonly types: readonly ResourceType[];
  readonly context: StrategyContext;
  private readonly parts: RegistryParts;

  constructor(options: RegistryOptions) {
    this.store = options.store;
    this.types = options.types;
    const clock = options.clock;
    this.context = {
      now: () => clock.now(),
      lookup: (resource, namespace, name) => this.store.get(resource, namespace, name)?.object,
      list: (resource, namespace) => this.store.listAll(resource, namespace).map((s) => s.object),
    };
    this.parts = {
      store: this.store,
      clock,
      context: this.context,
      kinds: this,
      bookmarkIntervalMs: options.bookmarkIntervalMs ?? 60_000,
      admission: options.admission ?? [],
      byStorage: (storage) => this.byStorage(storage),
    };
  }

  /** Whether `kind` is served at `apiVersion`, as a resource or as the body of a subresource (Binding, TokenRequest). */
  has(apiVersion: string, kind: string): boolean {
    return this.types.some(
      (t) =>
        (apiVersionOf(t) === apiVersion && t.kind === kind) ||
        t.subresources.some(
          (s) =>
            s.kind === kind &&
            apiVersionOf({ group: s.group ?? t.group, version: s.version ?? t.version }) === apiVersion,
        ),
    );
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

  get(t: ResourceType, namespace: string, name: string): KubeObject {
    const stored = this.store.get(t.storage, ns(t, namespace), name);
    if (!stored) throw notFound(groupResource(t), name);
    return toApi(t, stored.object);
  }

  list(t: ResourceType, namespace: string | undefined, options: ListOptions = {}): KubeObject {
    return listObjects(this.parts, t, namespace, options);
  }

  create(t: ResourceType, namespace: string, body: unknown, options: WriteOptions = {}): WriteResult {
    return createObject(this.parts, t, namespace, body, options);
  }

  /** PUT of the main resource or of its `status` subresource. */
  update(
    t: ResourceType,
    namespace: string,
    name: string,
    body: unknown,
    options: SubresourceWriteOptions = {},
  ): WriteResult {
    return updateObject(this.parts, t, namespace, name, body, options);
  }

  /** Applies a patch to the current object, then stores it as an update would. */
  patch(
    t: ResourceType,
    namespace: string,
    name: string,
    type: PatchType,
    patch: unknown,
    options: SubresourceWriteOptions = {},
  ): WriteResult {
    return patchObject(this.parts, t, namespace, name, type, patch, options);
  }

  /** `pods/binding`: assigns a pending pod to a node (the scheduler's write). */
  bind(namespace: string, name: string, binding: unknown): Status {
    return bindPod(this.parts, namespace, name, binding);
  }

  delete(t: ResourceType, namespace: string, name: string, options: DeleteOptions = {}): DeleteResult {
    return deleteObject(this.parts, t, namespace, name, options);
  }

  deleteCollection(
    t: ResourceType,
    namespace: string | undefined,
    list: ListOptions,
    options: DeleteOptions,
  ): KubeObject {
    return deleteCollection(this.parts, t, namespace, list, options);
  }

  /** Removes an object at once, whatever its grace period or finalizers (controllers finishing a deletion). */
  forceRemove(storage: string, namespace: string, name: string): void {
    forceRemove(this.parts, storage, namespace, name);
  }

  watch(t: ResourceType, namespace: string | undefined, options: WatchOptions, sink: WatchSink): Watch {
    return watchObjects(this.parts, t, namespace, options, sink);
  }
}
