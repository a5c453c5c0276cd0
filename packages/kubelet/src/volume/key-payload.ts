import type { ConfigMap, Secret, Volume } from '@nodelet/api';
import {
  type FileProjection,
  InvalidPathError,
  isObjectNotFound,
  validatePath,
  type VolumeMountContext,
} from '@nodelet/volume';
import { VolumeError } from './volume-error.js';

/**
 * The files of a configMap or secret volume, or of such a projected source (upstream configmap and
 * secret MakePayload): every key as a file named by the key, or only the keys `items` lists, each at
 * its `path`; `mode` per item, else `defaultMode` (0644). A key that `items` names and the object lacks
 * is an error unless the source is `optional`. Each path is checked before anything is written, and an
 * object over the API's 1 MiB limit is refused: the message names the field.
 */
export type ObjectKind = 'configmap' | 'secret';

type KeyToPath = NonNullable<NonNullable<Volume['configMap']>['items']>[number];

/** The API's limit on the data of one ConfigMap or Secret (upstream MaxSecretSize, 1 MiB). */
export const maxObjectBytes = 1024 * 1024;

export const defaultFileMode = 0o644;

/** A ConfigMap's `data` (text) and `binaryData` (base64) by key. */
export function configMapData(cm: ConfigMap): Map<string, Buffer> {
  const data = new Map<string, Buffer>();
  for (const [k, v] of Object.entries(cm.data ?? {})) data.set(k, Buffer.from(v));
  for (const [k, v] of Object.entries(cm.binaryData ?? {})) data.set(k, Buffer.from(v, 'base64'));
  return data;
}

/** A Secret's `data` (base64) by key; `stringData`, which an API server merges in, wins as it would. */
export function secretData(secret: Secret): Map<string, Buffer> {
  const data = new Map<string, Buffer>();
  for (const [k, v] of Object.entries(secret.data ?? {})) data.set(k, Buffer.from(v, 'base64'));
  for (const [k, v] of Object.entries(secret.stringData ?? {})) data.set(k, Buffer.from(v));
  return data;
}

/**
 * The data of the ConfigMap or Secret a source names, by key; none when it does not exist and the
 * source is optional (a missing required one throws upstream's `configmap "x" not found`).
 */
export async function readKeyedObject(
  ctx: VolumeMountContext,
  kind: ObjectKind,
  name: string,
  optional: boolean,
): Promise<Map<string, Buffer>> {
  const namespace = ctx.pod.metadata?.namespace ?? 'default';
  try {
    return kind === 'configmap'
      ? configMapData(await ctx.objects.getConfigMap(namespace, name))
      : secretData(await ctx.objects.getSecret(namespace, name));
  } catch (err) {
    if (optional && isObjectNotFound(err)) return new Map();
    throw err;
  }
}

export interface KeySource {
  kind: ObjectKind;
  name: string;
  items?: KeyToPath[];
  optional: boolean;
  defaultMode: number;
  /** The source's field in the pod, for messages: `configMap`, `projected.sources[1].secret`. */
  field: string;
}

export function keyPayload(
  source: KeySource,
  data: ReadonlyMap<string, Buffer>,
): Map<string, FileProjection> {
  const { kind, name, field } = source;
  let total = 0;
  for (const v of data.values()) total += v.length;
  if (total > maxObjectBytes) {
    throw new VolumeError(
      `${kind} "${name}": data: Too long: must have at most ${maxObjectBytes} bytes (it has ${total})`,
    );
  }
  const payload = new Map<string, FileProjection>();
  if (!source.items?.length) {
    for (const [key, value] of data) {
      checkPath(key, `${kind} "${name}" key "${key}"`);
      payload.set(key, { data: value, mode: source.defaultMode });
    }
    return payload;
  }
  source.items.forEach((item, i) => {
    const value = data.get(item.key);
    if (!value) {
      if (source.optional) return;
      throw new VolumeError(
        kind === 'configmap'
          ? `configmap references non-existent config key: ${item.key}`
          : `references non-existent secret key: ${item.key}`,
      );
    }
    checkPath(item.path, `${field}.items[${i}].path`);
    const mode = item.mode ?? source.defaultMode;
    checkMode(mode, `${field}.items[${i}].mode`);
    payload.set(item.path, { data: value, mode });
  });
  return payload;
}

/** A path the atomic writer would refuse, refused now with the field it came from. */
export function checkPath(path: string, what: string): void {
  try {
    validatePath(path);
  } catch (err) {
    if (err instanceof InvalidPathError) throw new VolumeError(`${what}: ${err.message}`);
    throw err;
  }
}

/** Upstream validation of `defaultMode` and `mode`: 0 to 0777. */
export function checkMode(mode: number, field: string): void {
  if (!Number.isInteger(mode) || mode < 0 || mode > 0o777) {
    throw new VolumeError(
      `${field}: Invalid value: ${mode}: must be a number between 0 and 0777 (octal), both inclusive`,
    );
  }
}
