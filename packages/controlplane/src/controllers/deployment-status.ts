import type { KubeObject } from '../object.js';
import {
  condition,
  type Condition,
  maxUnavailable,
  revisionAnnotation,
  setCondition,
} from './deployment-util.js';

/**
 * A Deployment's status from its ReplicaSets (upstream's calculateStatus and syncRolloutStatus):
 * counts summed over the ReplicaSets, `updatedReplicas` those of the new one, and the conditions
 *
 *   Available    True  MinimumReplicasAvailable   at least replicas - maxUnavailable available
 *                False MinimumReplicasUnavailable
 *   Progressing  True  NewReplicaSetCreated       the new ReplicaSet was just made
 *                True  FoundNewReplicaSet         it exists, nothing moved yet
 *                True  ReplicaSetUpdated          its pods moved (lastUpdateTime restarts the deadline)
 *                True  NewReplicaSetAvailable     the rollout is complete
 *                False ProgressDeadlineExceeded   no progress for progressDeadlineSeconds
 *                Unknown DeploymentPaused / DeploymentResumed   paused, and after it is resumed
 *
 * Also the Deployment's revision annotation (the new ReplicaSet's), and when to look again for the
 * deadline.
 */
export interface ComputedStatus {
  status: Record<string, any>;
  annotations: Record<string, string>;
  requeueMs?: number;
}

export function deploymentStatus(
  d: KubeObject,
  newRS: KubeObject | undefined,
  all: KubeObject[],
  created: boolean,
  now: number,
): ComputedStatus {
  const replicas = d.spec?.replicas ?? 1;
  const sum = (f: string) => all.reduce((n, rs) => n + (rs.status?.[f] ?? 0), 0);
  const old = (d.status ?? {}) as Record<string, any>;
  const status: Record<string, any> = {
    observedGeneration: d.metadata.generation ?? 1,
    replicas: sum('replicas'),
    updatedReplicas: newRS?.status?.replicas ?? 0,
    readyReplicas: sum('readyReplicas'),
    availableReplicas: sum('availableReplicas'),
    unavailableReplicas: Math.max(0, replicas - sum('availableReplicas')),
    ...(old.collisionCount !== undefined ? { collisionCount: old.collisionCount } : {}),
  };
  let conditions: Condition[] = old.conditions ?? [];
  conditions =
    status.availableReplicas >= replicas - maxUnavailable(d)
      ? setCondition(
          conditions,
          condition(
            'Available',
            'True',
            'MinimumReplicasAvailable',
            'Deployment has minimum availability.',
            now,
          ),
        )
      : setCondition(
          conditions,
          condition(
            'Available',
            'False',
            'MinimumReplicasUnavailable',
            'Deployment does not have minimum availability.',
            now,
          ),
        );
  // checkPausedConditions: pausing and resuming show as Progressing=Unknown, unless it timed out.
  const progressing = conditions.find((c) => c.type === 'Progressing');
  if (progressing?.reason !== 'ProgressDeadlineExceeded') {
    const pausedShown = progressing?.reason === 'DeploymentPaused';
    if (d.spec?.paused && !pausedShown) {
      conditions = setCondition(
        conditions,
        condition('Progressing', 'Unknown', 'DeploymentPaused', 'Deployment is paused', now),
      );
    } else if (!d.spec?.paused && pausedShown) {
      conditions = setCondition(
        conditions,
        condition('Progressing', 'Unknown', 'DeploymentResumed', 'Deployment is resumed', now),
      );
    }
  }
  let requeueMs: number | undefined;
  const deadline = d.spec?.progressDeadlineSeconds;
  if (newRS && deadline !== undefined && !d.spec?.paused) {
    const name = newRS.metadata.name;
    const complete =
      status.updatedReplicas === replicas &&
      status.replicas === replicas &&
      status.availableReplicas === replicas;
    const progressed =
      status.updatedReplicas !== (old.updatedReplicas ?? 0) ||
      status.replicas < (old.replicas ?? 0) ||
      status.readyReplicas > (old.readyReplicas ?? 0) ||
      status.availableReplicas > (old.availableReplicas ?? 0);
    const current = conditions.find((c) => c.type === 'Progressing');
    if (complete) {
      conditions = setCondition(
        conditions,
        condition(
          'Progressing',
          'True',
          'NewReplicaSetAvailable',
          `ReplicaSet "${name}" has successfully progressed.`,
          now,
        ),
      );
    } else if (created) {
      conditions = setCondition(
        conditions,
        condition('Progressing', 'True', 'NewReplicaSetCreated', `Created new replica set "${name}"`, now),
      );
    } else if (progressed || !current) {
      // Progress restarts the deadline: the condition is replaced, keeping its transition time.
      const c = condition(
        'Progressing',
        'True',
        'ReplicaSetUpdated',
        `ReplicaSet "${name}" is progressing.`,
        now,
      );
      if (current?.status === 'True') c.lastTransitionTime = current.lastTransitionTime;
      conditions = [...conditions.filter((x) => x.type !== 'Progressing'), c];
    } else if (current.reason !== 'ProgressDeadlineExceeded' && current.reason !== 'NewReplicaSetAvailable') {
      const since = Date.parse(current.lastUpdateTime);
      const due = since + deadline * 1000;
      if (now >= due) {
        conditions = setCondition(
          conditions,
          condition(
            'Progressing',
            'False',
            'ProgressDeadlineExceeded',
            `ReplicaSet "${name}" has timed out progressing.`,
            now,
          ),
        );
      } else requeueMs = due - now;
    }
    if (!complete && requeueMs === undefined) {
      const p = conditions.find((c) => c.type === 'Progressing');
      if (p?.status === 'True')
        requeueMs = Math.max(1000, Date.parse(p.lastUpdateTime) + deadline * 1000 - now);
    }
  }
  status.conditions = conditions;
  for (const f of [
    'readyReplicas',
    'availableReplicas',
    'unavailableReplicas',
    'updatedReplicas',
    'replicas',
  ]) {
    if (status[f] === 0) delete status[f];
  }
  const annotations = { ...((d.metadata.annotations ?? {}) as Record<string, string>) };
  const revision = newRS?.metadata.annotations?.[revisionAnnotation];
  if (revision) annotations[revisionAnnotation] = revision;
  return { status, annotations, ...(requeueMs !== undefined ? { requeueMs } : {}) };
}
