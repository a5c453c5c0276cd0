import fastJsonPatch from 'fast-json-patch';
import { isObject } from '../object.js';
import { fieldModel, patchMeta } from './patch-meta.js';
import { badRequest, ApiError } from './status.js';

/**
 * The three patch types of the API (PATCH's Content-Type):
 *
 *   application/json-patch+json            RFC 6902 operations (fast-json-patch)
 *   application/merge-patch+json           RFC 7386: maps merge, `null` deletes, lists are replaced
 *   application/strategic-merge-patch+json Kubernetes' strategic merge: lists with a merge key merge by
 *                                          that key, with the directives kubectl's three-way patches use
 *                                          (`$patch`, `$retainKeys`, `$setElementOrder/…`,
 *                                          `$deleteFromPrimitiveList/…`)
 *
 * Each takes the current object and the patch and returns the patched copy; errors are 400/422 Status.
 */
export type PatchType = 'json' | 'merge' | 'strategic' | 'apply';

export function patchTypeOf(contentType: string): PatchType | undefined {
  const base = contentType.split(';')[0]!.trim().toLowerCase();
  switch (base) {
    case 'application/json-patch+json':
      return 'json';
    case 'application/merge-patch+json':
      return 'merge';
    case 'application/strategic-merge-patch+json':
      return 'strategic';
    case 'application/apply-patch+yaml':
    case 'application/apply-patch+cbor':
      return 'apply';
    default:
      return undefined;
  }
}

export function applyJsonPatch(current: unknown, patch: unknown): any {
  if (!Array.isArray(patch)) throw badRequest('json patch must be a list of operations');
  const doc = structuredClone(current);
  try {
    const error = fastJsonPatch.validate(patch as fastJsonPatch.Operation[], doc);
    if (error) throw error;
    return fastJsonPatch.applyPatch(doc, patch as fastJsonPatch.Operation[], false, true).newDocument;
  } catch (err) {
    if (err instanceof ApiError) throw err;
    const e = err as { name?: string; message?: string; operation?: unknown };
    if (e.name === 'TEST_OPERATION_FAILED') {
      throw new ApiError(
        422,
        'Invalid',
        `the server rejected our request due to an error in our request: testing value failed`,
      );
    }
    throw new ApiError(
      422,
      'Invalid',
      `the server rejected our request due to an error in our request: ${e.message ?? String(err)}`.split(
        '\n',
      )[0]!,
    );
  }
}

export function applyMergePatch(current: unknown, patch: unknown): any {
  if (!isObject(patch)) return structuredClone(patch);
  const target: Record<string, unknown> = isObject(current) ? structuredClone(current) : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete target[key];
    else target[key] = applyMergePatch(target[key], value);
  }
  return target;
}

const directive = '$patch';
const retainKeys = '$retainKeys';
const setOrderPrefix = '$setElementOrder/';
const deletePrimitivePrefix = '$deleteFromPrimitiveList/';

/** Applies a strategic merge patch to `current`, a value of the client-node model class `model`. */
export function applyStrategicMergePatch(current: unknown, patch: unknown, model: string): any {
  if (!isObject(patch)) throw badRequest('strategic merge patch must be a JSON object');
  const result = mergeMap(isObject(current) ? structuredClone(current) : {}, patch, model);
  return result === deleted ? {} : result;
}

const deleted = Symbol('deleted');

function mergeMap(original: Record<string, any>, patch: Record<string, any>, model: string | undefined): any {
  const mode = patch[directive];
  if (mode === 'replace') return clean(withoutDirectives(patch), model);
  if (mode === 'delete') return deleted;
  if (mode !== undefined && mode !== 'merge')
    throw badRequest(`unknown patch type: ${JSON.stringify(mode)} in map`);

  const retain = patch[retainKeys];
  if (retain !== undefined) {
    if (!Array.isArray(retain)) throw badRequest(`${retainKeys} must be a list`);
    for (const key of Object.keys(original)) if (!retain.includes(key)) delete original[key];
  }
  const orders = new Map<string, unknown[]>();
  for (const [key, value] of Object.entries(patch)) {
    if (key.startsWith(deletePrimitivePrefix)) {
      const field = key.slice(deletePrimitivePrefix.length);
      if (Array.isArray(original[field]) && Array.isArray(value)) {
        original[field] = original[field].filter((v: unknown) => !value.some((d) => d === v));
      }
    } else if (key.startsWith(setOrderPrefix)) {
      if (!Array.isArray(value)) throw badRequest(`${key} must be a list`);
      orders.set(key.slice(setOrderPrefix.length), value);
    }
  }
  for (const [key, value] of Object.entries(patch)) {
    if (
      key === directive ||
      key === retainKeys ||
      key.startsWith(setOrderPrefix) ||
      key.startsWith(deletePrimitivePrefix)
    )
      continue;
    const sub = fieldModel(model, key);
    if (value === null) {
      delete original[key];
      continue;
    }
    const old = original[key];
    if (isObject(value) && isObject(old)) {
      const merged = mergeMap(old, value, sub);
      if (merged === deleted) delete original[key];
      else original[key] = merged;
    } else if (isObject(value)) {
      if (value[directive] === 'delete') delete original[key];
      else original[key] = clean(withoutDirectives(value), sub);
    } else if (Array.isArray(value)) {
      const meta = patchMeta(model, key);
      if (meta?.strategy.split(',').includes('merge')) {
        original[key] = mergeList(Array.isArray(old) ? old : [], value, meta.mergeKey, sub);
      } else {
        original[key] = value.map((v) => clean(v, sub));
      }
    } else {
      original[key] = value;
    }
  }
  for (const [field, order] of orders) {
    const meta = patchMeta(model, field);
    if (Array.isArray(original[field])) original[field] = reorder(original[field], order, meta?.mergeKey);
  }
  return original;
}

function mergeList(
  original: unknown[],
  patch: unknown[],
  mergeKey: string | undefined,
  model: string | undefined,
): unknown[] {
  if (patch.some((item) => isObject(item) && item[directive] === 'replace')) {
    return patch
      .filter((item) => !(isObject(item) && item[directive] === 'replace'))
      .map((v) => clean(v, model));
  }
  if (!mergeKey) {
    // A list of scalars with the merge strategy is a set: the patch adds what the list lacks.
    const out = [...original];
    for (const item of patch) if (!out.some((o) => o === item)) out.push(item);
    return out;
  }
  const out = original.map((o) => (isObject(o) ? o : o));
  for (const item of patch) {
    if (!isObject(item))
      throw badRequest(`patch list element must be an object with the merge key "${mergeKey}"`);
    const keyValue = item[mergeKey];
    if (keyValue === undefined) {
      throw badRequest(`map: ${JSON.stringify(item)} does not contain declared merge key: ${mergeKey}`);
    }
    const index = out.findIndex((o) => isObject(o) && o[mergeKey] === keyValue);
    if (item[directive] === 'delete') {
      if (index >= 0) out.splice(index, 1);
      continue;
    }
    if (index >= 0) {
      const merged = mergeMap(out[index] as Record<string, any>, item, model);
      if (merged === deleted) out.splice(index, 1);
      else out[index] = merged;
    } else {
      out.push(clean(withoutDirectives(item), model));
    }
  }
  return out;
}

/** Orders `list` by `order` (merge-key values, or objects holding them); what `order` lacks keeps its place after. */
function reorder(list: unknown[], order: unknown[], mergeKey: string | undefined): unknown[] {
  const keyOf = (v: unknown) => (mergeKey && isObject(v) ? v[mergeKey] : v);
  const wanted = order.map(keyOf);
  const rank = (v: unknown) => {
    const i = wanted.findIndex((w) => w === keyOf(v));
    return i < 0 ? wanted.length : i;
  };
  return list
    .map((v, i) => ({ v, i, r: rank(v) }))
    .sort((a, b) => a.r - b.r || a.i - b.i)
    .map((e) => e.v);
}

function withoutDirectives(map: Record<string, any>): Record<string, any> {
  const out: Record<string, any> = {};
  for (const [k, v] of Object.entries(map)) {
    if (
      k === directive ||
      k === retainKeys ||
      k.startsWith(setOrderPrefix) ||
      k.startsWith(deletePrimitivePrefix)
    )
      continue;
    out[k] = v;
  }
  return out;
}

/** A patch value written where nothing was: directives removed, `null` members dropped. */
function clean(value: unknown, model: string | undefined): any {
  if (Array.isArray(value)) {
    return value
      .filter((v) => !(isObject(v) && v[directive] === 'delete'))
      .map((v) => clean(isObject(v) ? withoutDirectives(v) : v, model));
  }
  if (!isObject(value)) return value;
  const out: Record<string, any> = {};
  for (const [k, v] of Object.entries(withoutDirectives(value))) {
    if (v === null) continue;
    out[k] = clean(v, fieldModel(model, k));
  }
  return out;
}
