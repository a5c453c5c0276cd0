import type { RequestUser } from '../apiserver/resource-type.js';
import type {
  AuthorizationResult,
  Authorizer,
  RequestAttributes,
  RuleResolver,
  RulesForUser,
} from './attributes.js';
import type { NodeGraph, VertexType } from './node-graph.js';
import { fieldSelectorValue } from './request-info.js';

/**
 * Upstream's Node authorizer (plugin/pkg/auth/authorizer/node/node_authorizer.go, with
 * AuthorizeNodeWithSelectors on as in v1.34): a kubelet — user `system:node:<name>` in `system:nodes` —
 * may read the Secrets, ConfigMaps, PersistentVolumeClaims and pods that pods bound to it use, create
 * tokens only for their service accounts, touch only its own Lease, read only its own Node and list or
 * watch only its own pods. Everything else a node does is checked against the static node rules (the
 * `system:node` ClusterRole's). It never denies: a refusal is "no opinion" with a reason, and the chain
 * goes on to RBAC, which grants nodes nothing — so the reason is what the 403 says.
 *
 * Which node or pod object a node may write is NodeRestriction admission's job (admission/), since
 * only the object's content says it.
 */
export const nodesGroup = 'system:nodes';
const nodeUserPrefix = 'system:node:';

/** The node a user is (upstream's nodeidentifier): undefined when not a node, '' when it names none. */
export function nodeIdentity(user: RequestUser): string | undefined {
  if (!user.groups.includes(nodesGroup)) return undefined;
  return user.name.startsWith(nodeUserPrefix) ? user.name.slice(nodeUserPrefix.length) : '';
}

const allow: AuthorizationResult = { decision: 'allow', reason: '' };
const noOpinion = (reason = ''): AuthorizationResult => ({ decision: 'no-opinion', reason });

export class NodeAuthorizer implements Authorizer, RuleResolver {
  readonly name = 'Node';

  /** `nodeRulesAllow` answers whether the static node rules allow a request. */
  constructor(
    private readonly graph: NodeGraph,
    private readonly nodeRulesAllow: (attrs: RequestAttributes) => boolean,
  ) {}

  authorize(attrs: RequestAttributes): AuthorizationResult {
    const node = nodeIdentity(attrs.user);
    if (node === undefined) return noOpinion();
    if (node === '') return noOpinion(`unknown node for user "${attrs.user.name}"`);
    if (attrs.resourceRequest) {
      const decided = this.byResource(node, attrs);
      if (decided) return decided;
    }
    return this.nodeRulesAllow(attrs) ? allow : noOpinion();
  }

  /** A node's rules depend on its pods: upstream says the list is incomplete, and why. */
  rulesFor(user: RequestUser): RulesForUser {
    const none = { resourceRules: [], nonResourceRules: [] };
    if (nodeIdentity(user) === undefined) return { ...none, incomplete: false };
    return {
      ...none,
      incomplete: true,
      evaluationError: 'node authorizer does not support user rule resolution',
    };
  }

  /** The resources the node authorizer subdivides; undefined for the rest (static rules decide). */
  private byResource(node: string, a: RequestAttributes): AuthorizationResult | undefined {
    const resource = `${a.apiGroup}/${a.resource}`;
    switch (resource) {
      case '/secrets':
        return this.readNamespaced(node, 'secrets', a);
      case '/configmaps':
        return this.readNamespaced(node, 'configmaps', a);
      case '/persistentvolumeclaims':
        if (a.subresource === 'status') {
          if (a.verb !== 'update' && a.verb !== 'patch')
            return noOpinion('can only get/update/patch this type');
          return this.related(node, 'persistentvolumeclaims', a);
        }
        return this.get(node, 'persistentvolumeclaims', a);
      case '/serviceaccounts':
        return this.createToken(node, a);
      case 'coordination.k8s.io/leases':
        return this.lease(node, a);
      case '/nodes':
        return this.nodeObject(node, a);
      case '/pods':
        return this.pod(node, a);
      default:
        return undefined;
    }
  }

  private related(node: string, type: VertexType, a: RequestAttributes): AuthorizationResult {
    if (a.name === '') return noOpinion('No Object name found');
    if (this.graph.hasPath(node, type, a.namespace, a.name)) return allow;
    return noOpinion(`no relationship found between node '${node}' and this object`);
  }

  private get(node: string, type: VertexType, a: RequestAttributes): AuthorizationResult {
    if (a.verb !== 'get') return noOpinion('can only get individual resources of this type');
    if (a.subresource) return noOpinion('cannot get subresource');
    return this.related(node, type, a);
  }

  private readNamespaced(node: string, type: VertexType, a: RequestAttributes): AuthorizationResult {
    if (a.verb !== 'get' && a.verb !== 'list' && a.verb !== 'watch')
      return noOpinion('can only read resources of this type');
    if (a.subresource) return noOpinion('cannot read subresource');
    if (!a.namespace) return noOpinion('can only read namespaced object of this type');
    return this.related(node, type, a);
  }

  private createToken(node: string, a: RequestAttributes): AuthorizationResult {
    if (a.verb !== 'create' || a.name === '')
      return noOpinion('can only create tokens for individual service accounts');
    if (a.subresource !== 'token') return noOpinion('can only create token subresource of serviceaccount');
    return this.related(node, 'serviceaccounts', a);
  }

  private lease(node: string, a: RequestAttributes): AuthorizationResult {
    if (!['get', 'create', 'update', 'patch', 'delete'].includes(a.verb))
      return noOpinion('can only get, create, update, patch, or delete a node lease');
    if (a.namespace !== 'kube-node-lease')
      return noOpinion('can only access leases in the "kube-node-lease" system namespace');
    // On create the name is in the body: NodeRestriction admission checks it.
    if (a.verb !== 'create' && a.name !== node)
      return noOpinion('can only access node lease with the same name as the requesting node');
    return allow;
  }

  private nodeObject(node: string, a: RequestAttributes): AuthorizationResult {
    if (a.subresource === '') {
      // Which node is written is NodeRestriction's to check.
      if (a.verb === 'create' || a.verb === 'update' || a.verb === 'patch') return allow;
      if (a.verb === 'get' || a.verb === 'list' || a.verb === 'watch') {
        if (a.name === node) return allow;
        if (a.name === '') return noOpinion(`node '${node}' cannot read all nodes, only its own Node object`);
        return noOpinion(`node '${node}' cannot read '${a.name}', only its own Node object`);
      }
    } else if (a.subresource === 'status' && (a.verb === 'update' || a.verb === 'patch')) {
      return allow;
    }
    return noOpinion();
  }

  private pod(node: string, a: RequestAttributes): AuthorizationResult {
    switch (a.subresource) {
      case '':
        if (a.verb === 'get') return this.get(node, 'pods', a);
        if (a.verb === 'list' || a.verb === 'watch') {
          if (fieldSelectorValue(a.fieldSelector, 'spec.nodeName') === node) return allow;
          if (a.name !== '') return this.related(node, 'pods', a);
          return noOpinion('can only list/watch pods with spec.nodeName field selector');
        }
        // Mirror pods: NodeRestriction limits them to pods bound to this node.
        if (a.verb === 'create' || a.verb === 'delete') return allow;
        break;
      case 'status':
        if (a.verb === 'update' || a.verb === 'patch') return allow;
        break;
      case 'eviction':
        if (a.verb === 'create') return allow;
        break;
    }
    return noOpinion();
  }
}
