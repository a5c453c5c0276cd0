import type { RevisionStore } from '../storage/revision-store.js';
import type { Authorizer, RuleResolver } from './attributes.js';
import { bootstrapClusterRoles } from './bootstrap-cluster-roles.js';
import { AuthorizationChain, alwaysAllow } from './chain.js';
import type { AuthorizationMode } from './modes.js';
import { NodeAuthorizer } from './node-authorizer.js';
import { NodeGraph } from './node-graph.js';
import { rulesAllow, rulesOf } from './policy-rule.js';
import { PrivilegedGroupsAuthorizer } from './privileged-groups.js';
import { RbacAuthorizer } from './rbac-authorizer.js';

/**
 * The authorization chain of `--authorization-mode` (modes.ts), behind the `system:masters` group that
 * kube-apiserver always lets through first.
 */
const alwaysDeny: Authorizer = {
  name: 'AlwaysDeny',
  authorize: () => ({ decision: 'deny', reason: 'Everything is forbidden.' }),
};

export interface AuthorizationSetup {
  chain: AuthorizationChain;
  /** The RBAC authorizer when RBAC is a mode (its rules back the escalation checks of RBAC writes). */
  rbac?: RbacAuthorizer;
  /** Stops the indexes' store subscriptions. */
  close(): void;
}

export function buildAuthorization(
  modes: readonly AuthorizationMode[],
  store: RevisionStore,
): AuthorizationSetup {
  const links: Authorizer[] = [new PrivilegedGroupsAuthorizer()];
  const resolvers: RuleResolver[] = [];
  const closers: (() => void)[] = [];
  let rbacAuthorizer: RbacAuthorizer | undefined;
  for (const mode of modes) {
    switch (mode) {
      case 'Node': {
        // The static rules the Node authorizer applies to what it does not subdivide: system:node's.
        const rules = rulesOf(bootstrapClusterRoles().find((r) => r.metadata.name === 'system:node'));
        const graph = new NodeGraph(store);
        closers.push(() => graph.close());
        const node = new NodeAuthorizer(graph, (attrs) => rulesAllow(attrs, rules));
        links.push(node);
        resolvers.push(node);
        break;
      }
      case 'RBAC': {
        const rbac = RbacAuthorizer.fromStore(store);
        rbacAuthorizer = rbac;
        closers.push(() => rbac.close());
        links.push(rbac);
        resolvers.push(rbac);
        break;
      }
      case 'AlwaysAllow':
        links.push(alwaysAllow);
        break;
      case 'AlwaysDeny':
        links.push(alwaysDeny);
        break;
    }
  }
  return {
    chain: new AuthorizationChain(links, resolvers),
    ...(rbacAuthorizer ? { rbac: rbacAuthorizer } : {}),
    close: () => {
      for (const close of closers) close();
    },
  };
}
