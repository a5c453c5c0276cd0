import { randomBytes } from 'node:crypto';
import { isIPv4 } from 'node:net';
import { networkInterfaces } from 'node:os';
import { bootstrapTokenSecretType } from './apiserver/authentication.js';
import type { Registry } from './apiserver/registry.js';
import { ApiError } from './apiserver/status.js';
import type { KubeObject } from './object.js';
import { readBootstrapToken, writeTokenKubeconfig } from './pki.js';

/**
 * What a new cluster holds before anything else runs: its namespaces, the `kubernetes` Service and
 * EndpointSlice that point at this server, and a bootstrap token for joining kubelets with the
 * bindings that let it join.
 */

/** The group of the bootstrap tokens `nodelet up` makes (kubeadm's is system:bootstrappers:kubeadm:default-node-token). */
export const nodeBootstrapTokenGroup = 'system:bootstrappers:nodelet:default-node-token';

/**
 * What kubeadm binds for TLS bootstrapping (`kubeadm init phase bootstrap-token`), under nodelet's
 * names: the bootstrap token's group may create CSRs (system:node-bootstrapper) and have client
 * certificates auto-approved; nodes may have their renewed client certificates auto-approved.
 */
const nodeBootstrapBindings: [name: string, clusterRole: string, group: string][] = [
  ['nodelet:kubelet-bootstrap', 'system:node-bootstrapper', nodeBootstrapTokenGroup],
  [
    'nodelet:node-autoapprove-bootstrap',
    'system:certificates.k8s.io:certificatesigningrequests:nodeclient',
    nodeBootstrapTokenGroup,
  ],
  [
    'nodelet:node-autoapprove-certificate-rotation',
    'system:certificates.k8s.io:certificatesigningrequests:selfnodeclient',
    'system:nodes',
  ],
];

/** Creates the bootstrap bindings that are missing (a changed one is left as its owner made it). */
export function ensureNodeBootstrapBindings(registry: Registry): void {
  const t = registry.byStorage('clusterrolebindings');
  for (const [name, role, group] of nodeBootstrapBindings) {
    if (registry.store.get('clusterrolebindings', '', name)) continue;
    registry.create(t, '', {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: group }],
    });
  }
}

/**
 * The address the `kubernetes` EndpointSlice names, which pods reach the API server at (upstream's
 * --advertise-address, which defaults from --bind-address): the bind address itself when it is one
 * IPv4 address; for 0.0.0.0 (or ::) the host's first IPv4 address that is not loopback. With the
 * default bind, 127.0.0.1, clients on the host reach the server and pods do not: bind an address of the
 * node (`nodelet up --address`) for pods that talk to the API.
 */
export function advertiseAddress(bindAddress: string): string {
  if (isIPv4(bindAddress) && bindAddress !== '0.0.0.0') return bindAddress;
  if (bindAddress === '0.0.0.0' || bindAddress === '::') {
    for (const addrs of Object.values(networkInterfaces())) {
      for (const a of addrs ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
    }
  }
  return '127.0.0.1';
}

/** The namespaces every cluster has (the bootstrap RBAC policy puts roles in kube-system and kube-public). */
export function ensureSystemNamespaces(registry: Registry): void {
  const namespaces = registry.byStorage('namespaces');
  for (const name of ['default', 'kube-system', 'kube-public', 'kube-node-lease']) {
    if (!registry.store.get('namespaces', '', name)) {
      registry.create(namespaces, '', { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
    }
  }
}

/** The namespaces every cluster has, and the `kubernetes` Service pointing at this server. */
export function ensureClusterObjects(
  registry: Registry,
  clusterIP: string,
  port: number,
  advertise = '127.0.0.1',
): void {
  ensureSystemNamespaces(registry);
  const services = registry.byStorage('services');
  const desiredPorts = [{ name: 'https', port: 443, protocol: 'TCP', targetPort: port }];
  const svc = registry.store.get('services', 'default', 'kubernetes')?.object;
  if (!svc) {
    registry.create(services, 'default', {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'kubernetes', labels: { component: 'apiserver', provider: 'kubernetes' } },
      spec: {
        type: 'ClusterIP',
        clusterIP,
        ports: desiredPorts,
        sessionAffinity: 'None',
      },
    });
  } else if (svc.spec?.ports?.[0]?.targetPort !== port) {
    registry.store.update('services', 'default', 'kubernetes', (s) => {
      s.spec.ports = desiredPorts;
      return s;
    });
  }
  const slices = registry.byStorage('endpointslices');
  const slice: KubeObject = {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      name: 'kubernetes',
      namespace: 'default',
      labels: { 'kubernetes.io/service-name': 'kubernetes' },
    },
    addressType: 'IPv4',
    endpoints: [{ addresses: [advertise], conditions: { ready: true } }],
    ports: [{ name: 'https', port, protocol: 'TCP' }],
  };
  const existing = registry.store.get('endpointslices', 'default', 'kubernetes')?.object;
  try {
    if (!existing) registry.create(slices, 'default', slice);
    else if (existing.ports?.[0]?.port !== port || existing.endpoints?.[0]?.addresses?.[0] !== advertise) {
      registry.store.update('endpointslices', 'default', 'kubernetes', (e) => ({
        ...e,
        ports: slice.ports,
        endpoints: slice.endpoints,
      }));
    }
  } catch (err) {
    if (!(err instanceof ApiError && err.code === 409)) throw err;
  }
}

/**
 * One bootstrap token (a `bootstrap-token-<id>` Secret in kube-system, as `kubeadm token create` makes)
 * and `<dataDir>/bootstrap-kubeconfig` holding it: a kubelet given that file as
 * `--bootstrap-kubeconfig` asks for its client certificate, which the CSR controller approves and
 * signs. The token is kept across restarts while its Secret exists; it does not expire (delete the
 * Secret to revoke it, and a new one is made at the next start).
 */
export async function ensureBootstrapToken(
  registry: Registry,
  kubeconfigPath: string,
  server: string,
  ca: string,
): Promise<void> {
  const store = registry.store;
  let token = await readBootstrapToken(kubeconfigPath);
  const id = token?.split('.')[0];
  if (!token || !id || !store.get('secrets', 'kube-system', `bootstrap-token-${id}`)) {
    const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
    const random = (n: number) => [...randomBytes(n)].map((b) => alphabet[b % alphabet.length]).join('');
    token = `${random(6)}.${random(16)}`;
    const [newId, secret] = token.split('.') as [string, string];
    const b64 = (v: string) => Buffer.from(v).toString('base64');
    registry.create(registry.byStorage('secrets'), 'kube-system', {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: `bootstrap-token-${newId}` },
      type: bootstrapTokenSecretType,
      data: {
        description: b64('made by nodelet up for kubelets joining by TLS bootstrapping'),
        'token-id': b64(newId),
        'token-secret': b64(secret),
        'usage-bootstrap-authentication': b64('true'),
        'usage-bootstrap-signing': b64('true'),
        'auth-extra-groups': b64(nodeBootstrapTokenGroup),
      },
    });
  }
  await writeTokenKubeconfig(kubeconfigPath, {
    server,
    ca,
    token,
    user: 'kubelet-bootstrap',
  });
}
