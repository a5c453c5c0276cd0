import { isIPv4 } from 'node:net';
import type { Service } from './objects.js';

export type Protocol = 'TCP' | 'UDP' | 'SCTP';

/** Upstream's default `sessionAffinityConfig.clientIP.timeoutSeconds`: 3 hours. */
export const DEFAULT_STICKY_SECONDS = 10800;

/**
 * One port of one Service, as the proxy needs it (upstream `ServicePort` / `BaseServicePortInfo`).
 * `name` is the ServicePortName string: `namespace/name:port`, or `namespace/name` for an unnamed port.
 */
export interface ServicePortInfo {
  readonly name: string;
  /** `namespace/name` of the Service. */
  readonly service: string;
  readonly namespace: string;
  readonly serviceName: string;
  readonly portName: string;
  readonly protocol: Protocol;
  readonly clusterIP: string;
  readonly port: number;
  /** 0 when the service has no node port. */
  readonly nodePort: number;
  readonly externalIPs: readonly string[];
  /** `status.loadBalancer.ingress[].ip` of a LoadBalancer service (ipMode Proxy excluded, as upstream). */
  readonly loadBalancerIPs: readonly string[];
  readonly loadBalancerSourceRanges: readonly string[];
  readonly sessionAffinity: 'None' | 'ClientIP';
  readonly stickyMaxAgeSeconds: number;
  readonly internalPolicyLocal: boolean;
  readonly externalPolicyLocal: boolean;
  readonly healthCheckNodePort: number;
  /** Topology-aware routing asked for (annotation `service.kubernetes.io/topology-mode: Auto`, or trafficDistribution). */
  readonly topologyAware: boolean;
}

/** `namespace/name:port` (or `namespace/name` when the port has no name), as upstream ServicePortName.String(). */
export function servicePortName(service: string, portName: string): string {
  return portName ? `${service}:${portName}` : service;
}

/** NodePort, external IPs or load-balancer IPs make a service port reachable from outside the node. */
export function externallyAccessible(p: ServicePortInfo): boolean {
  return p.nodePort > 0 || p.externalIPs.length > 0 || p.loadBalancerIPs.length > 0;
}

/** Whether any traffic to this port uses the cluster-wide endpoint set (upstream UsesClusterEndpoints). */
export function usesClusterEndpoints(p: ServicePortInfo): boolean {
  return !p.internalPolicyLocal || (externallyAccessible(p) && !p.externalPolicyLocal);
}

/** Whether any traffic to this port uses only this node's endpoints (upstream UsesLocalEndpoints). */
export function usesLocalEndpoints(p: ServicePortInfo): boolean {
  return p.internalPolicyLocal || (externallyAccessible(p) && p.externalPolicyLocal);
}

/**
 * The IPv4 service ports of a (validated, proxied) Service. IPv6 cluster IPs are not proxied by this
 * IPv4 proxier; the caller reports that once.
 */
export function servicePortsOf(svc: Service): ServicePortInfo[] {
  const spec = svc.spec ?? {};
  const namespace = svc.metadata?.namespace || 'default';
  const serviceName = svc.metadata?.name ?? '';
  const service = `${namespace}/${serviceName}`;
  const clusterIP = spec.clusterIP ?? '';
  if (!isIPv4(clusterIP)) return [];
  const type = spec.type ?? 'ClusterIP';
  const externalIPs = [...new Set((spec.externalIPs ?? []).filter((ip) => isIPv4(ip)))];
  const loadBalancerIPs =
    type === 'LoadBalancer'
      ? [
          ...new Set(
            (svc.status?.loadBalancer?.ingress ?? [])
              .filter((i) => i.ip && isIPv4(i.ip) && i.ipMode !== 'Proxy')
              .map((i) => i.ip!),
          ),
        ]
      : [];
  const sourceRanges =
    loadBalancerIPs.length > 0 ? (spec.loadBalancerSourceRanges ?? []).map((c) => c.trim()) : [];
  const affinity = spec.sessionAffinity === 'ClientIP' ? 'ClientIP' : 'None';
  const sticky =
    affinity === 'ClientIP'
      ? (spec.sessionAffinityConfig?.clientIP?.timeoutSeconds ?? DEFAULT_STICKY_SECONDS)
      : 0;
  const externalCapable = type === 'NodePort' || type === 'LoadBalancer' || externalIPs.length > 0;
  const annotations = svc.metadata?.annotations ?? {};
  const topologyMode =
    annotations['service.kubernetes.io/topology-mode'] ??
    annotations['service.kubernetes.io/topology-aware-hints'];
  const topologyAware =
    (topologyMode !== undefined && topologyMode.toLowerCase() === 'auto') ||
    spec.trafficDistribution === 'PreferClose' ||
    spec.trafficDistribution === 'PreferSameZone';
  return (spec.ports ?? []).map((p) => {
    const portName = p.name ?? '';
    return {
      name: servicePortName(service, portName),
      service,
      namespace,
      serviceName,
      portName,
      protocol: (p.protocol ?? 'TCP') as Protocol,
      clusterIP,
      port: p.port!,
      nodePort: type === 'NodePort' || type === 'LoadBalancer' ? (p.nodePort ?? 0) : 0,
      externalIPs,
      loadBalancerIPs,
      loadBalancerSourceRanges: sourceRanges,
      sessionAffinity: affinity,
      stickyMaxAgeSeconds: sticky,
      internalPolicyLocal: spec.internalTrafficPolicy === 'Local',
      externalPolicyLocal: externalCapable && spec.externalTrafficPolicy === 'Local',
      healthCheckNodePort:
        type === 'LoadBalancer' && spec.externalTrafficPolicy === 'Local'
          ? (spec.healthCheckNodePort ?? 0)
          : 0,
      topologyAware,
    };
  });
}
