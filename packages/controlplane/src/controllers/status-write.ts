import { canonicalJson } from '@nodelet/api';
import type { KubeObject } from '../object.js';
import type { Registry } from '../apiserver/registry.js';
import { ApiError } from '../apiserver/status.js';

/**
 * A controller's status write: through the status subresource, only when the status changed, and
 * nothing when the object went away meanwhile (its next event, if any, brings the controller back).
 */
export function writeStatusIfChanged(
  registry: Registry,
  storage: string,
  obj: KubeObject,
  status: Record<string, unknown>,
): void {
  if (canonicalJson(status) === canonicalJson(obj.status ?? {})) return;
  try {
    registry.update(
      registry.byStorage(storage),
      obj.metadata.namespace!,
      obj.metadata.name!,
      { ...obj, status },
      { subresource: 'status' },
    );
  } catch (err) {
    if (!(err instanceof ApiError && err.code === 404)) throw err;
  }
}
