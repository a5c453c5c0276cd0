import type { IncomingMessage } from 'node:http';
import type { KubeletAuthenticator } from './authn.js';
import { forbiddenMessage, type KubeletAuthorizer, nodeRequestAttributes } from './authz.js';
import type { RequestUser } from './routes.js';

export type AuthVerdict =
  { ok: true; user: RequestUser } | { ok: false; status: 401 | 403 | 500; body: string };

/**
 * upstream InstallAuthFilter: authenticate (401 `Unauthorized`), then authorize the request's
 * `nodes/<name>/<subresource>` attributes (403 `Forbidden (user=…, verb=…, resource=nodes,
 * subresource(s)=[…])`; a review that could not be made is a 500). Upgrade requests go through it too.
 */
export async function checkRequest(
  req: IncomingMessage,
  path: string,
  nodeName: string,
  authn: KubeletAuthenticator,
  authz: KubeletAuthorizer,
): Promise<AuthVerdict> {
  const who = await authn.authenticate(req);
  if (!('user' in who)) return { ok: false, status: 401, body: 'Unauthorized' };
  const attrs = nodeRequestAttributes(nodeName, req.method ?? '', path);
  const decision = await authz.authorize(who.user, attrs);
  if ('error' in decision) {
    const subresources = attrs.map((a) => a.subresource).join(' ');
    return {
      ok: false,
      status: 500,
      body: `Authorization error (user=${who.user.name}, verb=${attrs[0]?.verb ?? ''}, resource=nodes, subresource(s)=[${subresources}])`,
    };
  }
  if (!decision.allowed) return { ok: false, status: 403, body: forbiddenMessage(who.user, attrs) };
  return { ok: true, user: who.user };
}
