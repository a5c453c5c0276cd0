/**
 * What kube-apiserver puts before its authorization chain (authorizerfactory.NewPrivilegedGroups):
 * members of `system:masters` may do anything, whatever RBAC holds, so the administrator cannot lock
 * themselves out by deleting a binding.
 */
import type { AuthorizationResult, Authorizer, RequestAttributes } from './attributes.js';

export const systemMasters = 'system:masters';

export class PrivilegedGroupsAuthorizer implements Authorizer {
  readonly name = 'PrivilegedGroups';
  private readonly groups: ReadonlySet<string>;

  constructor(groups: readonly string[] = [systemMasters]) {
    this.groups = new Set(groups);
  }

  authorize(attrs: RequestAttributes): AuthorizationResult {
    if (attrs.user.groups.some((g) => this.groups.has(g))) return { decision: 'allow', reason: '' };
    return { decision: 'no-opinion', reason: '' };
  }
}
