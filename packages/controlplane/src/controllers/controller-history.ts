import { canonicalJson } from '@nodelet/api';
import type { KubeObject } from '../object.js';
import type { Registry } from '../apiserver/registry.js';
import { ApiError } from '../apiserver/status.js';
import { computeHash } from './deployment-util.js';
import { controllerRef, controllerRefOf, selectorMatches } from './pod-control.js';

/**
 * ControllerRevisions of DaemonSets and StatefulSets (upstream's pkg/controller/history and the
 * controllers' `constructHistory`): each distinct pod template is stored once, as the patch
 * `{"spec":{"template":{…,"$patch":"replace"}}}`, in a revision named `<owner>-<hash>` labelled
 * `controller-revision-hash`; going back to an earlier template renumbers its revision as the newest
 * instead of making a copy. Revisions no live pod uses are deleted beyond `revisionHistoryLimit`.
 */
export const revisionHashLabel = 'controller-revision-hash';

export interface History {
  /** The revision of the owner's current template. */
  current: KubeObject;
  /** Every revision the owner controls, oldest revision number first. */
  all: KubeObject[];
  /** The collision count to store in the owner's status (undefined when never needed). */
  collisionCount: number | undefined;
}

/** The revision data of `owner`'s template. */
export function revisionData(owner: KubeObject): Record<string, unknown> {
  return { spec: { template: { ...structuredClone(owner.spec?.template ?? {}), $patch: 'replace' } } };
}

/** The pod template stored in a revision. */
export function templateOf(revision: KubeObject): Record<string, any> {
  const t = structuredClone(revision.data?.spec?.template ?? {});
  delete t.$patch;
  return t;
}

const sameData = (a: KubeObject, data: unknown) => canonicalJson(a.data ?? null) === canonicalJson(data);

/** The revisions `owner` controls, adopting orphans its selector matches (ClaimControllerRevisions). */
function claimRevisions(
  registry: Registry,
  owner: KubeObject,
  apiVersion: string,
  kind: string,
): KubeObject[] {
  const out: KubeObject[] = [];
  for (const { object: r } of registry.store.listAll('controllerrevisions', owner.metadata.namespace)) {
    const ref = controllerRefOf(r);
    if (ref?.uid === owner.metadata.uid) out.push(r);
    else if (
      !ref &&
      !r.metadata.deletionTimestamp &&
      selectorMatches(owner.spec?.selector, r.metadata.labels)
    ) {
      out.push(
        registry.store.update('controllerrevisions', r.metadata.namespace!, r.metadata.name!, (x) => {
          x.metadata.ownerReferences = [
            ...(x.metadata.ownerReferences ?? []),
            controllerRef(owner, apiVersion, kind),
          ];
          return x;
        }).object,
      );
    }
  }
  return out.sort((a, b) => (a.revision ?? 0) - (b.revision ?? 0));
}

/** Finds or makes the revision of `owner`'s current template (constructHistory). */
export function ensureHistory(
  registry: Registry,
  owner: KubeObject,
  apiVersion: string,
  kind: string,
): History {
  const type = registry.byStorage('controllerrevisions');
  const namespace = owner.metadata.namespace!;
  let all = claimRevisions(registry, owner, apiVersion, kind);
  const data = revisionData(owner);
  const latest = all.at(-1)?.revision ?? 0;
  let collisionCount: number | undefined = owner.status?.collisionCount;
  const equal = all.filter((r) => sameData(r, data));
  let current = equal.at(-1);
  if (current && (current.revision ?? 0) < latest) {
    // Rolled back to an earlier template: that revision becomes the newest.
    current = registry.update(type, namespace, current.metadata.name!, {
      ...current,
      revision: latest + 1,
    }).object;
  }
  while (!current) {
    const hash = computeHash(data, collisionCount);
    const body = {
      apiVersion: 'apps/v1',
      kind: 'ControllerRevision',
      metadata: {
        name: `${owner.metadata.name!.slice(0, 223)}-${hash}`,
        labels: { ...(owner.spec?.template?.metadata?.labels ?? {}), [revisionHashLabel]: hash },
        ownerReferences: [controllerRef(owner, apiVersion, kind)],
      },
      data,
      revision: latest + 1,
    };
    try {
      current = registry.create(type, namespace, body).object;
    } catch (err) {
      if (!(err instanceof ApiError && err.code === 409)) throw err;
      const existing = registry.store.get('controllerrevisions', namespace, body.metadata.name)?.object;
      // The same template under this owner (its store copy lagging): use it; another: hash again.
      if (existing && sameData(existing, data) && controllerRefOf(existing)?.uid === owner.metadata.uid)
        current = existing;
      else collisionCount = (collisionCount ?? 0) + 1;
    }
  }
  all = claimRevisions(registry, owner, apiVersion, kind);
  return { current, all, collisionCount };
}

/** Deletes the oldest revisions that no live pod uses beyond `revisionHistoryLimit` (truncateHistory). */
export function truncateHistory(
  registry: Registry,
  owner: KubeObject,
  history: History,
  inUse: ReadonlySet<string>,
): void {
  const limit = owner.spec?.revisionHistoryLimit ?? 10;
  const idle = history.all.filter(
    (r) => r.metadata.name !== history.current.metadata.name && !inUse.has(r.metadata.name!),
  );
  const type = registry.byStorage('controllerrevisions');
  for (const r of idle.slice(0, Math.max(0, idle.length - limit))) {
    try {
      registry.delete(type, r.metadata.namespace!, r.metadata.name!);
    } catch (err) {
      if (!(err instanceof ApiError && err.code === 404)) throw err;
    }
  }
}
