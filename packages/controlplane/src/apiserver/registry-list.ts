/** LIST: selectors, paging with continue tokens, and the resourceVersion a list reads at. */
import type { KubeObject } from '../object.js';
import { matchesSelectors, parseFields, parseRevision, toApi } from './registry-helpers.js';
import type { ListOptions, RegistryParts } from './registry-types.js';
import { apiVersionOf, type ResourceType } from './resource-type.js';
import { parseLabelSelector } from './selectors.js';
import { ApiError, badRequest, expired } from './status.js';

export function listObjects(
  p: Pick<RegistryParts, 'store'>,
  t: ResourceType,
  namespace: string | undefined,
  options: ListOptions = {},
): KubeObject {
  const labels = parseLabelSelector(options.labelSelector);
  const fields = parseFields(t, options.fieldSelector);
  const limit = options.limit && options.limit > 0 ? options.limit : undefined;
  let at: number | undefined;
  let after: { namespace: string; name: string } | undefined;
  if (options.continue) {
    const token = decodeContinue(options.continue);
    at = token.rev;
    after = { namespace: token.namespace, name: token.name };
    if (at < p.store.compactRevision) {
      throw expired(
        `The provided continue parameter is too old to display a consistent list result (its revision ${at} was compacted). List again without continue.`,
      );
    }
  } else {
    at = listRevision(p, options);
  }
  const revision = at ?? p.store.revision;
  const items: KubeObject[] = [];
  let next: { namespace: string; name: string } | undefined;
  const scope = t.namespaced ? namespace : undefined;
  // Read in batches until the page is full: selectors filter after the read.
  const batch = limit ? Math.max(limit, 100) : undefined;
  for (let guard = 0; guard < 1_000_000; guard++) {
    const page = p.store.list(t.storage, scope, {
      ...(after ? { after } : {}),
      ...(batch ? { limit: batch } : {}),
      ...(at !== undefined && at < p.store.revision ? { atRevision: at } : {}),
    });
    let cut = false;
    for (const item of page.items) {
      if (!matchesSelectors(t, item.object, labels, fields)) continue;
      items.push(toApi(t, item.object, true));
      if (limit && items.length === limit) {
        next = { namespace: item.object.metadata.namespace ?? '', name: item.object.metadata.name! };
        cut = true;
        break;
      }
    }
    if (cut || !page.next) {
      if (cut && !page.next && next) {
        // The page ended exactly at the last item read; more may follow only if the batch was full.
        const rest = p.store.list(t.storage, scope, {
          after: next,
          limit: 1,
          ...(at !== undefined && at < p.store.revision ? { atRevision: at } : {}),
        });
        if (rest.items.length === 0 && !rest.next) next = undefined;
      }
      break;
    }
    after = page.next;
  }
  const metadata: Record<string, unknown> = { resourceVersion: String(revision) };
  if (next) metadata.continue = encodeContinue(revision, next.namespace, next.name);
  return { apiVersion: apiVersionOf(t), kind: t.listKind, metadata, items };
}

/** The revision a list (without continue) reads at: undefined for the newest. */
function listRevision(p: Pick<RegistryParts, 'store'>, options: ListOptions): number | undefined {
  const rv = options.resourceVersion;
  const match = options.resourceVersionMatch;
  if (match && match !== 'Exact' && match !== 'NotOlderThan') {
    throw badRequest(
      `resourceVersionMatch: Unsupported value: "${match}": supported values: "Exact", "NotOlderThan"`,
    );
  }
  if (match && (rv === undefined || rv === '')) {
    throw badRequest('resourceVersionMatch is forbidden unless resourceVersion is provided');
  }
  if (rv === undefined || rv === '' || rv === '0') {
    if (match === 'Exact' && rv === '0')
      throw badRequest('resourceVersionMatch "Exact" is forbidden for resourceVersion "0"');
    return undefined;
  }
  const n = parseRevision(rv);
  if (n > p.store.revision) {
    throw new ApiError(504, 'Timeout', `Too large resource version: ${n}, current: ${p.store.revision}`, {
      causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }],
      retryAfterSeconds: 1,
    });
  }
  if (match === 'Exact') {
    if (n < p.store.compactRevision)
      throw expired(`too old resource version: ${n} (${p.store.compactRevision})`);
    return n;
  }
  return undefined;
}

interface ContinueToken {
  rev: number;
  namespace: string;
  name: string;
}

function encodeContinue(rev: number, namespace: string, name: string): string {
  return Buffer.from(JSON.stringify({ v: 'meta.k8s.io/v1', rv: rev, start: [namespace, name] })).toString(
    'base64url',
  );
}

function decodeContinue(token: string): ContinueToken {
  try {
    const data = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
    if (data.v === 'meta.k8s.io/v1' && Number.isInteger(data.rv) && Array.isArray(data.start)) {
      return { rev: data.rv, namespace: String(data.start[0]), name: String(data.start[1]) };
    }
  } catch {
    // fall through
  }
  throw badRequest('continue key is not valid: the token is malformed; list again without continue');
}
