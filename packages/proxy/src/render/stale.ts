import type { ChangeSet } from '../state.js';
import type { PortPlan } from './rule-body.js';

/** Chains and sets that no service port uses any more: to be deleted. */
export interface Stale {
  chains: Set<string>;
  sets: Set<string>;
}

/**
 * After a partial render: the chains and sets changed or removed service ports had (`before`) that
 * their new plans (`now`) no longer have. A chain or set belongs to one service port (its name hashes
 * the port's), so only those ports are visited: an endpoint change costs the same at 10 services as at
 * 10,000.
 */
export function staleAfterPartial(
  changes: ChangeSet,
  before: ReadonlyMap<string, PortPlan>,
  now: ReadonlyMap<string, PortPlan>,
): Stale {
  const stale: Stale = { chains: new Set(), sets: new Set() };
  for (const names of [changes.removed, changes.updated]) {
    for (const name of names) {
      const old = before.get(name);
      if (!old) continue;
      const plan = now.get(name);
      const chains = new Set(plan?.chains);
      for (const c of old.chains) if (!chains.has(c)) stale.chains.add(c);
      if (!old.sets) continue;
      const sets = new Set(plan?.sets);
      for (const s of old.sets) if (!sets.has(s)) stale.sets.add(s);
    }
  }
  return stale;
}

/**
 * Chains of applied plans that a full render did not carry over (`now` has another plan for the port,
 * or none): candidates for deletion, with what the kernel was found to have.
 */
export function droppedChains(
  applied: ReadonlyMap<string, PortPlan>,
  now: ReadonlyMap<string, PortPlan>,
): string[] {
  const dropped: string[] = [];
  for (const [name, plan] of applied) {
    if (now.get(name) === plan) continue; // carried over: every chain of it is still in use
    for (const c of plan.chains) dropped.push(c);
  }
  return dropped;
}

/** Every chain (or set) of `plans`. */
export function ownedBy(plans: Iterable<PortPlan>, kind: 'chains' | 'sets'): Set<string> {
  const owned = new Set<string>();
  for (const p of plans) for (const c of p[kind] ?? []) owned.add(c);
  return owned;
}

/** The `candidates` no plan of `active` owns (the active ones indexed only when there are candidates). */
export function unusedAmong(
  candidates: Iterable<string>,
  active: Iterable<PortPlan>,
  kind: 'chains' | 'sets',
): Set<string> {
  const list = [...candidates];
  const stale = new Set<string>();
  if (list.length === 0) return stale; // a fresh table: no need to index the active objects
  const used = ownedBy(active, kind);
  for (const c of list) if (!used.has(c)) stale.add(c);
  return stale;
}
