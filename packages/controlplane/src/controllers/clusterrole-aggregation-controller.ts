import type { Clock, Logger } from '@nodelet/kernel';
import { canonicalJson } from '@nodelet/api';
import type { Registry } from '../apiserver/registry.js';
import { labelSelectorFromObject, matchLabels } from '../apiserver/selectors.js';
import type { PolicyRule } from '../authorization/policy-rule.js';
import { rbacStorage } from '../authorization/rbac-index.js';
import type { KubeObject } from '../object.js';
import { WorkQueue } from './work-queue.js';

/**
 * Upstream's clusterroleaggregation controller: a ClusterRole with an `aggregationRule` holds the union of
 * the rules of the ClusterRoles its selectors match (in name order, each rule once, never its own) — how
 * admin, edit and view gain the rules of the system:aggregate-to-* roles, and of any role an operator
 * labels to extend them. Any ClusterRole change re-syncs every aggregating one.
 */
export class ClusterRoleAggregationController {
  private readonly queue: WorkQueue;
  private unsubscribe?: () => void;

  constructor(
    private readonly registry: Registry,
    clock: Clock,
    logger: Logger,
  ) {
    this.queue = new WorkQueue('clusterrole-aggregation', (name) => this.sync(name), clock, logger);
  }

  start(): void {
    this.unsubscribe = this.registry.store.subscribe(rbacStorage.clusterRoles, () =>
      this.enqueueAggregating(),
    );
    this.enqueueAggregating();
  }

  stop(): void {
    this.unsubscribe?.();
    this.queue.stop();
  }

  private enqueueAggregating(): void {
    for (const { object } of this.registry.store.listAll(rbacStorage.clusterRoles))
      if (object.aggregationRule) this.queue.add(object.metadata.name!);
  }

  /** Sets the rules of the ClusterRole `name` from the roles its aggregationRule selects. */
  sync(name: string): void {
    const store = this.registry.store;
    const current = store.get(rbacStorage.clusterRoles, '', name);
    const role = current?.object;
    if (!current || !role?.aggregationRule) return;
    const rules = aggregatedRules(
      role,
      store.listAll(rbacStorage.clusterRoles).map((s) => s.object),
    );
    if (canonicalJson(rules) === canonicalJson(role.rules ?? [])) return;
    store.update(
      rbacStorage.clusterRoles,
      '',
      name,
      (r) => {
        r.rules = rules;
        return r;
      },
      current.rev,
    );
  }
}

/** The union of the rules of the roles `role`'s selectors match, in upstream's order. */
export function aggregatedRules(role: KubeObject, all: readonly KubeObject[]): PolicyRule[] {
  const rules: PolicyRule[] = [];
  const seen = new Set<string>();
  const byName = [...all].sort((a, b) => (a.metadata.name! < b.metadata.name! ? -1 : 1));
  for (const s of (role.aggregationRule?.clusterRoleSelectors ?? []) as Parameters<
    typeof labelSelectorFromObject
  >[0][]) {
    const selector = labelSelectorFromObject(s ?? {});
    for (const other of byName) {
      if (other.metadata.name === role.metadata.name || !matchLabels(selector, other.metadata.labels))
        continue;
      for (const rule of (other.rules ?? []) as PolicyRule[]) {
        const key = canonicalJson(rule);
        if (seen.has(key)) continue;
        seen.add(key);
        rules.push(rule);
      }
    }
  }
  return rules;
}
