import type { EndpointSlice, Service } from '../objects.js';

/**
 * The proxy conformance fixtures: one set of Services and EndpointSlices that every backend renders
 * (golden files) and, with the backend addresses of a test's network namespaces, carries real traffic
 * for. Namespace `conformance`; this node is `node-a`.
 *
 * | service            | what it exercises                                                        |
 * | ------------------ | ------------------------------------------------------------------------ |
 * | web                | NodePort 30080; 3 ready endpoints + 1 not ready; ClusterIP 10.96.0.10:80 |
 * | sticky             | sessionAffinity ClientIP, timeout 600 s                                  |
 * | empty              | NodePort without endpoints: rejected                                     |
 * | dns                | two ports, UDP and TCP, one endpoint                                     |
 * | lb-local           | LoadBalancer, externalTrafficPolicy Local, source ranges, external IP    |
 * | internal-local     | internalTrafficPolicy Local without a local endpoint: dropped            |
 * | terminating        | only terminating endpoints: the serving one is used                      |
 * | headless           | clusterIP None: no rules                                                 |
 */
export const CONFORMANCE_NODE = 'node-a';
export const CONFORMANCE_NAMESPACE = 'conformance';

export interface FixtureAddresses {
  /** The three backend IPs (pods); the first is on this node. */
  backends: [string, string, string];
  /** Port the backends listen on. Default 8080. */
  targetPort?: number;
}

export const GOLDEN_ADDRESSES: FixtureAddresses = { backends: ['10.244.1.10', '10.244.2.10', '10.244.3.10'] };

export const WEB = { clusterIP: '10.96.0.10', port: 80, nodePort: 30080, name: 'conformance/web:http' };
export const STICKY = { clusterIP: '10.96.0.11', port: 80, name: 'conformance/sticky:http' };
export const EMPTY = { clusterIP: '10.96.0.12', port: 80, nodePort: 30082, name: 'conformance/empty:http' };

const meta = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  namespace: CONFORMANCE_NAMESPACE,
  ...extra,
});

const sliceMeta = (service: string, suffix = 'abcde') =>
  meta(`${service}-${suffix}`, { labels: { 'kubernetes.io/service-name': service } });

function readyEndpoint(ip: string, node: string, extra: Record<string, unknown> = {}) {
  return {
    addresses: [ip],
    conditions: { ready: true, serving: true, terminating: false },
    nodeName: node,
    ...extra,
  };
}

export function conformanceServices(): Service[] {
  const svc = (name: string, spec: Service['spec'], status?: Service['status']): Service => ({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: meta(name),
    spec,
    ...(status ? { status } : {}),
  });
  return [
    svc('web', {
      type: 'NodePort',
      clusterIP: WEB.clusterIP,
      ports: [{ name: 'http', protocol: 'TCP', port: WEB.port, targetPort: 8080, nodePort: WEB.nodePort }],
    }),
    svc('sticky', {
      clusterIP: STICKY.clusterIP,
      sessionAffinity: 'ClientIP',
      sessionAffinityConfig: { clientIP: { timeoutSeconds: 600 } },
      ports: [{ name: 'http', protocol: 'TCP', port: STICKY.port, targetPort: 8080 }],
    }),
    svc('empty', {
      type: 'NodePort',
      clusterIP: EMPTY.clusterIP,
      ports: [
        { name: 'http', protocol: 'TCP', port: EMPTY.port, targetPort: 8080, nodePort: EMPTY.nodePort },
      ],
    }),
    svc('dns', {
      clusterIP: '10.96.0.13',
      ports: [
        { name: 'dns', protocol: 'UDP', port: 53, targetPort: 5353 },
        { name: 'dns-tcp', protocol: 'TCP', port: 53, targetPort: 5353 },
      ],
    }),
    svc(
      'lb-local',
      {
        type: 'LoadBalancer',
        clusterIP: '10.96.0.14',
        externalIPs: ['198.51.100.10'],
        externalTrafficPolicy: 'Local',
        healthCheckNodePort: 30300,
        loadBalancerSourceRanges: ['203.0.113.0/24'],
        ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 8080, nodePort: 30084 }],
      },
      { loadBalancer: { ingress: [{ ip: '192.0.2.10' }] } },
    ),
    svc('internal-local', {
      clusterIP: '10.96.0.15',
      internalTrafficPolicy: 'Local',
      ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 8080 }],
    }),
    svc('terminating', {
      clusterIP: '10.96.0.16',
      ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 8080 }],
    }),
    svc('headless', {
      clusterIP: 'None',
      ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 8080 }],
    }),
  ];
}

export function conformanceSlices(addresses: FixtureAddresses = GOLDEN_ADDRESSES): EndpointSlice[] {
  const [a, b, c] = addresses.backends;
  const port = addresses.targetPort ?? 8080;
  const slice = (
    service: string,
    endpoints: unknown[],
    ports: unknown[],
    suffix?: string,
  ): EndpointSlice => ({
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: sliceMeta(service, suffix),
    addressType: 'IPv4',
    endpoints: endpoints as EndpointSlice['endpoints'],
    ports: ports as EndpointSlice['ports'],
  });
  const http = [{ name: 'http', protocol: 'TCP', port }];
  return [
    slice(
      'web',
      [
        readyEndpoint(a, CONFORMANCE_NODE),
        readyEndpoint(b, 'node-b'),
        {
          addresses: ['10.244.9.99'],
          conditions: { ready: false, serving: false, terminating: false },
          nodeName: 'node-b',
        },
      ],
      http,
    ),
    // The third endpoint of `web` comes from a second slice: slices are merged per service.
    slice('web', [readyEndpoint(c, 'node-c')], http, 'fghij'),
    slice(
      'sticky',
      [readyEndpoint(a, CONFORMANCE_NODE), readyEndpoint(b, 'node-b'), readyEndpoint(c, 'node-c')],
      http,
    ),
    slice('empty', [], http),
    slice(
      'dns',
      [readyEndpoint(a, CONFORMANCE_NODE)],
      [
        { name: 'dns', protocol: 'UDP', port: 5353 },
        { name: 'dns-tcp', protocol: 'TCP', port: 5353 },
      ],
    ),
    slice('lb-local', [readyEndpoint(a, CONFORMANCE_NODE), readyEndpoint(b, 'node-b')], http),
    slice('internal-local', [readyEndpoint(b, 'node-b')], http),
    slice(
      'terminating',
      [
        {
          addresses: [b],
          conditions: { ready: false, serving: true, terminating: true },
          nodeName: 'node-b',
        },
        {
          addresses: [c],
          conditions: { ready: false, serving: false, terminating: true },
          nodeName: 'node-c',
        },
      ],
      http,
    ),
  ];
}
