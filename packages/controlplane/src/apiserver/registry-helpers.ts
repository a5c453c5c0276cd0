/**
 * What every registry operation shares: the API view of a stored object, selector matching, store
 * errors as API errors, names and revisions.
 */
import { randomBytes } from 'node:crypto';
import type { FieldError } from '@nodelet/api';
import type { KubeObject } from '../object.js';
import { StoreError } from '../storage/revision-store.js';
import { groupResource, type ResourceType } from './resource-type.js';
import {
  matchFields,
  matchLabels,
  parseFieldSelector,
  type FieldSelector,
  type LabelSelector,
} from './selectors.js';
import { alreadyExists, badRequest, conflict, expired, invalid, notFound, staleObject } from './status.js';

/** A stored object as `t`'s API version shows it; list items carry no apiVersion/kind. */
export function toApi(t: ResourceType, stored: KubeObject, listItem = false): KubeObject {
  const obj = t.fromStorage ? t.fromStorage(stored) : stored;
  if (listItem) {
    const { apiVersion: _a, kind: _k, ...rest } = obj;
    return rest as KubeObject;
  }
  return obj;
}

export function matchesSelectors(
  t: ResourceType,
  stored: KubeObject,
  labels: LabelSelector,
  fields: FieldSelector,
): boolean {
  if (labels.length > 0 && !matchLabels(labels, stored.metadata.labels)) return false;
  if (fields.length === 0) return true;
  return matchFields(fields, (field) => {
    if (field === 'metadata.name') return stored.metadata.name;
    if (field === 'metadata.namespace') return stored.metadata.namespace ?? '';
    return t.fields[field]?.(stored);
  });
}

export function parseFields(t: ResourceType, text: string | undefined): FieldSelector {
  const selector = parseFieldSelector(text);
  for (const r of selector) {
    if (r.field !== 'metadata.name' && r.field !== 'metadata.namespace' && !t.fields[r.field]) {
      throw badRequest(
        `"${r.field}" is not a known field selector: only "metadata.name", "metadata.namespace"${Object.keys(
          t.fields,
        )
          .map((f) => `, "${f}"`)
          .join('')}`,
      );
    }
  }
  return selector;
}

export function translateStoreError(t: ResourceType, err: unknown, name: string): unknown {
  if (!(err instanceof StoreError)) return err;
  switch (err.code) {
    case 'AlreadyExists':
      return alreadyExists(groupResource(t), name);
    case 'NotFound':
      return notFound(groupResource(t), name);
    case 'Conflict':
      return conflict(groupResource(t), name, staleObject);
    case 'Compacted':
      return expired(err.message);
    default:
      return err;
  }
}

export function mustBeValid(t: ResourceType, obj: KubeObject, errors: FieldError[]): void {
  if (errors.length > 0) throw invalid(t.kind, t.group, obj.metadata.name ?? '', errors);
}

export function ns(t: ResourceType, namespace: string | undefined): string {
  return t.namespaced ? (namespace ?? '') : '';
}

export function copyOrDelete(target: Record<string, any>, source: Record<string, any>, key: string): void {
  if (source[key] === undefined) delete target[key];
  else target[key] = source[key];
}

const suffixAlphabet = 'bcdfghjklmnpqrstvwxz2456789';

/** Five characters from upstream's generateName alphabet (no vowels, no ambiguous digits). */
export function randomSuffix(length = 5): string {
  const bytes = randomBytes(length);
  let out = '';
  for (let i = 0; i < length; i++) out += suffixAlphabet[bytes[i]! % suffixAlphabet.length];
  return out;
}

export function parseRevision(rv: string): number {
  // As upstream, a resource version is a uint64: a longer number is invalid, not one "too large" to wait for.
  if (!/^\d+$/.test(rv) || BigInt(rv) > 0xffffffffffffffffn)
    throw badRequest(`resourceVersion: Invalid value: "${rv}": must be a non-negative 64-bit integer`);
  return Number(rv);
}

export function parseRevisionOr(rv: string): number {
  return /^\d+$/.test(rv) ? Number(rv) : NaN;
}
