/**
 * The parts of Service and EndpointSlice (core/v1, discovery.k8s.io/v1) that the proxy reads, as plain
 * JSON. Objects come from YAML files or the API server, so every field is optional here and checked by
 * `validateService` / `validateEndpointSlice` before use.
 */
export interface ObjectMeta {
  name?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  deletionTimestamp?: string;
}

export interface ServicePort {
  name?: string;
  protocol?: string;
  port?: number;
  targetPort?: number | string;
  nodePort?: number;
  appProtocol?: string;
}

export interface ServiceSpec {
  type?: string;
  clusterIP?: string;
  clusterIPs?: string[];
  ipFamilies?: string[];
  ports?: ServicePort[];
  selector?: Record<string, string>;
  externalIPs?: string[];
  externalName?: string;
  sessionAffinity?: string;
  sessionAffinityConfig?: { clientIP?: { timeoutSeconds?: number } };
  externalTrafficPolicy?: string;
  internalTrafficPolicy?: string;
  healthCheckNodePort?: number;
  loadBalancerSourceRanges?: string[];
  trafficDistribution?: string;
}

export interface LoadBalancerIngress {
  ip?: string;
  hostname?: string;
  ipMode?: string;
}

export interface Service {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
  spec?: ServiceSpec;
  status?: { loadBalancer?: { ingress?: LoadBalancerIngress[] } };
}

export interface EndpointConditions {
  ready?: boolean | null;
  serving?: boolean | null;
  terminating?: boolean | null;
}

export interface Endpoint {
  addresses?: string[];
  conditions?: EndpointConditions;
  hostname?: string;
  nodeName?: string;
  zone?: string;
  hints?: { forZones?: { name?: string }[]; forNodes?: { name?: string }[] };
  targetRef?: { kind?: string; name?: string; namespace?: string; uid?: string };
}

export interface EndpointPort {
  name?: string;
  protocol?: string;
  port?: number;
  appProtocol?: string;
}

export interface EndpointSlice {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
  addressType?: string;
  endpoints?: Endpoint[];
  ports?: EndpointPort[];
}

/** The label that ties an EndpointSlice to its Service (discovery.k8s.io/v1 `LabelServiceName`). */
export const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';

/** `namespace/name`, with the namespace defaulted to `default` as the API server does. */
export function namespacedName(meta: ObjectMeta | undefined): string {
  return `${meta?.namespace || 'default'}/${meta?.name ?? ''}`;
}

/** The Service an EndpointSlice belongs to, `namespace/name`, or undefined when it has no service label. */
export function sliceServiceName(slice: EndpointSlice): string | undefined {
  const name = slice.metadata?.labels?.[SERVICE_NAME_LABEL];
  return name ? `${slice.metadata?.namespace || 'default'}/${name}` : undefined;
}

export function isService(obj: unknown): obj is Service {
  return !!obj && typeof obj === 'object' && (obj as { kind?: unknown }).kind === 'Service';
}

export function isEndpointSlice(obj: unknown): obj is EndpointSlice {
  return !!obj && typeof obj === 'object' && (obj as { kind?: unknown }).kind === 'EndpointSlice';
}
