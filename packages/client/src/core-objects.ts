import type { ListWatchApi } from './kube-api.js';
import { type ListerWatcher, listWatcher } from './reflector.js';

/**
 * Collections of the core API group (`/api/v1`) and what the kubelet watches in them: one object by
 * name (upstream's watch-based ConfigMap and Secret managers: a field selector `metadata.name=<name>`
 * on the namespace's collection, so only the objects its pods reference reach the node), and the
 * Services of a namespace (for the pods' service environment variables).
 */
export function corePath(resource: string, namespace?: string): string {
  return namespace === undefined ? `/api/v1/${resource}` : `/api/v1/namespaces/${namespace}/${resource}`;
}

/** Lists and watches the one object `namespace/name` of a core collection (`configmaps`, `secrets`). */
export function namedObjectListWatcher<T>(
  api: ListWatchApi,
  resource: string,
  namespace: string,
  name: string,
): ListerWatcher<T> {
  return listWatcher<T>(api, corePath(resource, namespace), { fieldSelector: `metadata.name=${name}` });
}

/** Lists and watches the Services of one namespace. */
export function namespaceServicesListWatcher<T>(api: ListWatchApi, namespace: string): ListerWatcher<T> {
  return listWatcher<T>(api, corePath('services', namespace));
}
