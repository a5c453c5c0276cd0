/**
 * @kubernetes/client-node's model classes type timestamps as `Date`; on the wire (YAML manifests, API
 * JSON) they are RFC 3339 strings. `Wire<T>` is the plain-JSON shape of a model, which is what nodelet
 * reads from files and the API and writes back.
 */
export type Wire<T> = T extends Date
  ? string
  : T extends (infer U)[]
    ? Wire<U>[]
    : T extends object
      ? { [K in keyof T]: Wire<T[K]> }
      : T;
