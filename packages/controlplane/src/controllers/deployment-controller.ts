import { canonicalJson } from '@nodelet/api';
import type { Clock, Logger } from '@nodelet/kernel';
import type { KubeObject } from '../object.js';
import type { Registry } from '../apiserver/registry.js';
import { ApiError } from '../apiserver/status.js';
import type { EventRecorder } from './event-recorder.js';
import { controllerRef, controllerRefOf, selectorMatches } from './pod-control.js';
import {
  computeHash,
  copiedAnnotations,
  desiredReplicasAnnotation,
  hashLabel,
  maxReplicasAnnotation,
  resolveFenceposts,
  revisionAnnotation,
  revisionOf,
  templateWithoutHash,
} from './deployment-util.js';
import { deploymentStatus } from './deployment-status.js';
import { isScalingEvent, scaleTargets } from './deployment-scale.js';
import { KeyedController } from './keyed-controller.js';

/**
 * The Deployment controller (upstream's pkg/controller/deployment): one ReplicaSet per pod template,
 * named `<deployment>-<pod-template-hash>` with the hash in its selector, template and pods, and
 * `deployment.kubernetes.io/revision` counting templates. RollingUpdate scales the new ReplicaSet up
 * within maxSurge and the old ones down within maxUnavailable; Recreate scales the old ones to zero, waits
 * for their pods to go, then scales the new one up. Old ReplicaSets beyond revisionHistoryLimit are
 * deleted once the rollout is complete. A change of spec.replicas (a scaling event), and any sync of a
 * paused Deployment, only scales, proportionally across active ReplicaSets (`deployment-scale.ts`).
 */
const apiVersion = 'apps/v1';

export class DeploymentController extends KeyedController {
  constructor(registry: Registry, clock: Clock, logger: Logger, events?: EventRecorder) {
    super(registry, clock, logger, events, 'deployments', 'deployment');
  }

  protected override watchMore(): (() => void)[] {
    const store = this.registry.store;
    return [
      store.subscribe('replicasets', (e) => this.enqueueOwner(e.object)),
      // Recreate waits for the old pods to be gone.
      store.subscribe('pods', (e) => {
        const ref = controllerRefOf(e.object);
        if (e.op !== 'delete' || ref?.kind !== 'ReplicaSet') return;
        const rs = store.get('replicasets', e.namespace, ref.name)?.object;
        if (rs) this.enqueueOwner(rs);
      }),
    ];
  }

  private enqueueOwner(rs: KubeObject): void {
    const ns = rs.metadata.namespace!;
    const ref = controllerRefOf(rs);
    if (ref) {
      if (ref.kind === 'Deployment') this.queue.add(`${ns}/${ref.name}`);
      return;
    }
    for (const { object: d } of this.registry.store.listAll('deployments', ns)) {
      if (selectorMatches(d.spec?.selector, rs.metadata.labels)) this.queue.add(`${ns}/${d.metadata.name}`);
    }
  }

  /** One step for the Deployment `namespace/name`. */
  sync(key: string): void {
    const [namespace, name] = key.split('/') as [string, string];
    const d = this.registry.store.get('deployments', namespace, name)?.object;
    if (!d || d.metadata.deletionTimestamp) return;
    const all = this.claimReplicaSets(d);
    let newRS = all.find(
      (rs) =>
        canonicalJson(templateWithoutHash(rs.spec?.template)) ===
        canonicalJson(templateWithoutHash(d.spec?.template)),
    );
    const old = all.filter((rs) => rs !== newRS);
    const created = !newRS;
    if (d.spec?.paused || isScalingEvent(d, all)) {
      // A scaling event (or a paused Deployment) is scaled, not rolled: upstream's `sync`.
      const targets = scaleTargets(d, newRS, old);
      for (const rs of all) {
        const to = targets.get(rs.metadata.uid!);
        if (to !== undefined) this.scale(d, rs, to, true);
      }
    } else {
      newRS = this.ensureNewReplicaSet(d, newRS, old);
      if (d.spec?.strategy?.type === 'Recreate') this.recreate(d, newRS, old);
      else this.rollingUpdate(d, newRS, old);
    }
    this.writeStatus(d, newRS, this.claimReplicaSets(d), created);
  }

  /** The ReplicaSets this Deployment controls, after adopting matching orphans and releasing others. */
  private claimReplicaSets(d: KubeObject): KubeObject[] {
    const out: KubeObject[] = [];
    for (const { object: rs } of this.registry.store.listAll('replicasets', d.metadata.namespace)) {
      const ref = controllerRefOf(rs);
      const matches = selectorMatches(d.spec?.selector, rs.metadata.labels);
      if (ref && ref.uid !== d.metadata.uid) continue;
      if (ref && matches) out.push(rs);
      else if (ref) this.setRSOwner(rs, undefined);
      else if (matches && !rs.metadata.deletionTimestamp) out.push(this.setRSOwner(rs, d));
    }
    return out.sort(
      (a, b) =>
        Date.parse(a.metadata.creationTimestamp ?? '') - Date.parse(b.metadata.creationTimestamp ?? '') ||
        (a.metadata.name! < b.metadata.name! ? -1 : 1),
    );
  }

  private setRSOwner(rs: KubeObject, owner: KubeObject | undefined): KubeObject {
    return this.registry.store.update('replicasets', rs.metadata.namespace!, rs.metadata.name!, (r) => {
      const refs = (r.metadata.ownerReferences ?? []).filter((x: { controller?: boolean }) => !x.controller);
      if (owner) refs.push(controllerRef(owner, apiVersion, 'Deployment'));
      if (refs.length) r.metadata.ownerReferences = refs;
      else delete r.metadata.ownerReferences;
      return r;
    }).object;
  }

  /** Finds or creates the ReplicaSet of the current template, with the next revision. */
  private ensureNewReplicaSet(d: KubeObject, newRS: KubeObject | undefined, old: KubeObject[]): KubeObject {
    const maxOld = Math.max(0, ...old.map(revisionOf));
    const revision = String(maxOld + 1);
    const replicas = d.spec?.replicas ?? 1;
    const maxReplicas = String(replicas + resolveSurge(d));
    if (newRS) {
      const a = newRS.metadata.annotations ?? {};
      if (revisionOf(newRS) > maxOld && a[desiredReplicasAnnotation] === String(replicas)) return newRS;
      const annotations = {
        ...a,
        ...copiedAnnotations(d),
        [revisionAnnotation]: revisionOf(newRS) > maxOld ? a[revisionAnnotation] : revision,
        [desiredReplicasAnnotation]: String(replicas),
        [maxReplicasAnnotation]: maxReplicas,
      };
      return this.writeRS({ ...newRS, metadata: { ...newRS.metadata, annotations } });
    }
    let collisions: number | undefined = d.status?.collisionCount;
    const type = this.registry.byStorage('replicasets');
    for (;;) {
      const hash = computeHash(d.spec?.template, collisions);
      const template = structuredClone(d.spec?.template ?? {});
      template.metadata = { ...(template.metadata ?? {}) };
      template.metadata.labels = { ...(template.metadata.labels ?? {}), [hashLabel]: hash };
      const sel = d.spec?.selector ?? {};
      const body = {
        apiVersion,
        kind: 'ReplicaSet',
        metadata: {
          name: `${d.metadata.name}-${hash}`,
          labels: template.metadata.labels,
          annotations: {
            ...copiedAnnotations(d),
            [revisionAnnotation]: revision,
            [desiredReplicasAnnotation]: String(replicas),
            [maxReplicasAnnotation]: maxReplicas,
          },
          ownerReferences: [controllerRef(d, apiVersion, 'Deployment')],
        },
        spec: {
          replicas: 0,
          minReadySeconds: d.spec?.minReadySeconds ?? 0,
          selector: { ...sel, matchLabels: { ...(sel.matchLabels ?? {}), [hashLabel]: hash } },
          template,
        },
      };
      try {
        // Created at 0 replicas; the strategy scales it (and records the ScalingReplicaSet event).
        return this.registry.create(type, d.metadata.namespace!, body).object;
      } catch (err) {
        if (!(err instanceof ApiError && err.code === 409)) throw err;
        // A ReplicaSet of another template has the name: count the collision and hash again.
        collisions = (collisions ?? 0) + 1;
        d.status = { ...(d.status ?? {}), collisionCount: collisions };
      }
    }
  }

  private rollingUpdate(d: KubeObject, newRS: KubeObject, old: KubeObject[]): void {
    const replicas = d.spec?.replicas ?? 1;
    const { maxSurge, maxUnavailable } = resolveFenceposts(d);
    const specOf = (rs: KubeObject) => rs.spec?.replicas ?? 0;
    // reconcileNewReplicaSet: up to maxSurge above replicas in all, never above replicas itself.
    const total = specOf(newRS) + old.reduce((n, rs) => n + specOf(rs), 0);
    if (specOf(newRS) > replicas) newRS = this.scale(d, newRS, replicas);
    else if (specOf(newRS) < replicas && total < replicas + maxSurge) {
      const up = Math.min(replicas + maxSurge - total, replicas - specOf(newRS));
      newRS = this.scale(d, newRS, specOf(newRS) + up);
    }
    // reconcileOldReplicaSets: keep replicas - maxUnavailable available.
    const oldCount = old.reduce((n, rs) => n + specOf(rs), 0);
    if (oldCount === 0) return;
    const minAvailable = replicas - Math.min(maxUnavailable, replicas);
    const allCount = specOf(newRS) + oldCount;
    const newUnavailable = specOf(newRS) - (newRS.status?.availableReplicas ?? 0);
    let budget = allCount - minAvailable - newUnavailable;
    if (budget <= 0) return;
    // First the old pods that are not available anyway (cleanupUnhealthyReplicas), oldest first.
    for (const rs of old) {
      if (budget <= 0) break;
      const unhealthy = specOf(rs) - (rs.status?.availableReplicas ?? 0);
      if (unhealthy <= 0) continue;
      const down = Math.min(unhealthy, budget);
      this.scale(d, rs, specOf(rs) - down);
      budget -= down;
      rs.spec = { ...rs.spec, replicas: specOf(rs) - down };
    }
    // Then available ones, as long as minAvailable stays available.
    const available = [newRS, ...old].reduce((n, rs) => n + (rs.status?.availableReplicas ?? 0), 0);
    let excess = Math.min(available - minAvailable, budget);
    for (const rs of old) {
      if (excess <= 0) break;
      const down = Math.min(specOf(rs), excess);
      if (down > 0) this.scale(d, rs, specOf(rs) - down);
      excess -= down;
    }
  }

  private recreate(d: KubeObject, newRS: KubeObject, old: KubeObject[]): void {
    for (const rs of old) if ((rs.spec?.replicas ?? 0) > 0) this.scale(d, rs, 0);
    const oldPodsLeft = old.some((rs) =>
      this.registry.store
        .listAll('pods', d.metadata.namespace)
        .some((p) => controllerRefOf(p.object)?.uid === rs.metadata.uid),
    );
    if (oldPodsLeft) return;
    const replicas = d.spec?.replicas ?? 1;
    if ((newRS.spec?.replicas ?? 0) !== replicas) this.scale(d, newRS, replicas);
  }

  /** Scales `rs` (scaleReplicaSet); with `annotate`, also when only its size annotations are stale. */
  private scale(d: KubeObject, rs: KubeObject, to: number, annotate = false): KubeObject {
    const from = rs.spec?.replicas ?? 0;
    const replicas = d.spec?.replicas ?? 1;
    const annotations = {
      ...(rs.metadata.annotations ?? {}),
      [desiredReplicasAnnotation]: String(replicas),
      [maxReplicasAnnotation]: String(replicas + resolveSurge(d)),
    };
    const stale = canonicalJson(annotations) !== canonicalJson(rs.metadata.annotations ?? {});
    if (from === to && !(annotate && stale)) return rs;
    const next = this.writeRS({
      ...rs,
      metadata: { ...rs.metadata, annotations },
      spec: { ...rs.spec, replicas: to },
    });
    if (from === to) return next;
    const verb = to > from ? 'up' : 'down';
    this.events?.record(
      d,
      'Normal',
      'ScalingReplicaSet',
      `Scaled ${verb} replica set ${rs.metadata.name} from ${from} to ${to}`,
    );
    return next;
  }

  private writeRS(rs: KubeObject): KubeObject {
    const type = this.registry.byStorage('replicasets');
    return this.registry.update(type, rs.metadata.namespace!, rs.metadata.name!, rs).object;
  }

  private writeStatus(
    d: KubeObject,
    newRS: KubeObject | undefined,
    all: KubeObject[],
    created: boolean,
  ): void {
    const { status, annotations, requeueMs } = deploymentStatus(d, newRS, all, created, this.clock.now());
    const key = `${d.metadata.namespace}/${d.metadata.name}`;
    if (requeueMs !== undefined) this.queue.addAfter(key, requeueMs);
    this.cleanupOld(d, newRS, all, status);
    const same =
      canonicalJson(status) === canonicalJson(d.status ?? {}) &&
      canonicalJson(annotations) === canonicalJson(d.metadata.annotations ?? {});
    if (same) return;
    const type = this.registry.byStorage('deployments');
    const body = { ...d, metadata: { ...d.metadata, annotations }, status };
    this.registry.update(type, d.metadata.namespace!, d.metadata.name!, body, { subresource: 'status' });
  }

  /** Old ReplicaSets with no replicas beyond revisionHistoryLimit go once the rollout is complete. */
  private cleanupOld(
    d: KubeObject,
    newRS: KubeObject | undefined,
    all: KubeObject[],
    status: Record<string, any>,
  ): void {
    if (status.updatedReplicas !== d.spec?.replicas || status.replicas !== d.spec?.replicas) return;
    const limit = d.spec?.revisionHistoryLimit ?? 10;
    const idle = all.filter(
      (rs) =>
        rs.metadata.uid !== newRS?.metadata.uid &&
        (rs.spec?.replicas ?? 0) === 0 &&
        (rs.status?.replicas ?? 0) === 0,
    );
    const surplus = idle
      .sort((a, b) => revisionOf(a) - revisionOf(b))
      .slice(0, Math.max(0, idle.length - limit));
    for (const rs of surplus) {
      try {
        this.registry.delete(
          this.registry.byStorage('replicasets'),
          rs.metadata.namespace!,
          rs.metadata.name!,
        );
      } catch (err) {
        if (!(err instanceof ApiError && err.code === 404)) throw err;
      }
    }
  }
}

function resolveSurge(d: KubeObject): number {
  return d.spec?.strategy?.type === 'RollingUpdate' ? resolveFenceposts(d).maxSurge : 0;
}
