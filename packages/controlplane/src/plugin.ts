import { defineCapability, definePlugin } from '@nodelet/kernel';
import { authorizationModes, type AuthorizationMode } from './authorization/modes.js';
import { ControlPlane } from './control-plane.js';

/**
 * The control plane as a kernel plugin: it provides `controlplane.api`, the running ControlPlane, so a
 * kubelet plugin in the same kernel (issue 6) can ask it for a node kubeconfig (`nodeKubeconfig`) and
 * register its `pods/log` provider (`registerLogProvider`), then talk to it over HTTPS with
 * @kubernetes/client-node like any remote kubelet would.
 */
export const ControlPlaneApi = defineCapability<ControlPlane>('controlplane.api', {
  version: 1,
  description: 'the embedded Kubernetes API server (nodelet up): its URL, kubeconfigs and hooks',
});

export interface ControlPlanePluginConfig {
  /** State directory: state.db, pki/, kubeconfig. */
  dataDir: string;
  /** HTTPS port (0: any free port). */
  port: number;
  bindAddress: string;
  serviceClusterIPRange: string;
  serviceNodePortRange: string;
  /** kube-controller-manager's --cluster-cidr and --node-cidr-mask-size: each Node's spec.podCIDR. */
  clusterCidr: string;
  nodeCidrMaskSize: number;
  scheduler: boolean;
  endpointSliceController: boolean;
  /** Every compactionIntervalSeconds, history older than the newest retainRevisions revisions is folded. */
  compactionIntervalSeconds: number;
  retainRevisions: number;
  /** SQLite synchronous mode: NORMAL (survives process crashes) or FULL (also power loss). */
  synchronous: 'NORMAL' | 'FULL';
  /** kube-apiserver's --token-auth-file: static bearer tokens. */
  tokenAuthFile?: string;
  /** kube-apiserver's --authorization-mode: the authorization chain (default Node, RBAC). */
  authorizationModes?: AuthorizationMode[];
  /** kube-apiserver's --encryption-provider-config: an EncryptionConfiguration file. */
  encryptionProviderConfig?: string;
  /** kube-apiserver's --audit-log-path (`-`: stdout) and --audit-policy-file. */
  auditLogPath?: string;
  auditPolicyFile?: string;
  /** kube-apiserver's --request-timeout, in ms (0: none). */
  requestTimeoutMs: number;
  /** kube-apiserver's --max-requests-inflight and --max-mutating-requests-inflight (0: no limit). */
  maxRequestsInflight: number;
  maxMutatingRequestsInflight: number;
  /** kube-controller-manager's --node-monitor-period and --node-monitor-grace-period, in ms. */
  nodeMonitorPeriodMs: number;
  nodeMonitorGracePeriodMs: number;
  /** kube-apiserver's --default-not-ready-toleration-seconds and --default-unreachable-toleration-seconds. */
  defaultNotReadyTolerationSeconds: number;
  defaultUnreachableTolerationSeconds: number;
  /** metrics-server's --metric-resolution, in ms: how often the kubelets' resource metrics are scraped. */
  metricResolutionMs: number;
}

export const controlPlaneConfigSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['dataDir'],
  properties: {
    dataDir: { type: 'string', minLength: 1 },
    port: { type: 'integer', minimum: 0, maximum: 65535, default: 6443 },
    bindAddress: { type: 'string', default: '127.0.0.1' },
    serviceClusterIPRange: { type: 'string', default: '10.96.0.0/12' },
    serviceNodePortRange: { type: 'string', default: '30000-32767' },
    clusterCidr: { type: 'string', default: '10.244.0.0/16' },
    nodeCidrMaskSize: { type: 'integer', minimum: 8, maximum: 30, default: 24 },
    scheduler: { type: 'boolean', default: true },
    endpointSliceController: { type: 'boolean', default: true },
    compactionIntervalSeconds: { type: 'integer', minimum: 1, default: 300 },
    retainRevisions: { type: 'integer', minimum: 0, default: 10000 },
    synchronous: { enum: ['NORMAL', 'FULL'], default: 'NORMAL' },
    tokenAuthFile: { type: 'string', minLength: 1 },
    authorizationModes: {
      type: 'array',
      minItems: 1,
      uniqueItems: true,
      items: { enum: [...authorizationModes] },
    },
    encryptionProviderConfig: { type: 'string', minLength: 1 },
    auditLogPath: { type: 'string', minLength: 1 },
    auditPolicyFile: { type: 'string', minLength: 1 },
    requestTimeoutMs: { type: 'integer', minimum: 0, default: 60_000 },
    maxRequestsInflight: { type: 'integer', minimum: 0, default: 400 },
    maxMutatingRequestsInflight: { type: 'integer', minimum: 0, default: 200 },
    nodeMonitorPeriodMs: { type: 'integer', minimum: 1, default: 5_000 },
    nodeMonitorGracePeriodMs: { type: 'integer', minimum: 1, default: 50_000 },
    defaultNotReadyTolerationSeconds: { type: 'integer', minimum: 0, default: 300 },
    defaultUnreachableTolerationSeconds: { type: 'integer', minimum: 0, default: 300 },
    metricResolutionMs: { type: 'integer', minimum: 1, default: 15_000 },
  },
} as const;

export const controlPlanePlugin = definePlugin<ControlPlanePluginConfig>({
  manifest: {
    name: 'controlplane',
    version: '0.1.0',
    description:
      'an embedded Kubernetes API server on SQLite, with a scheduler and an EndpointSlice controller',
    provides: [ControlPlaneApi],
    requires: [],
    configSchema: controlPlaneConfigSchema,
  },
  register(ctx) {
    const c = ctx.config;
    const cp = new ControlPlane({
      dataDir: c.dataDir,
      clock: ctx.clock,
      logger: ctx.logger,
      port: c.port,
      bindAddress: c.bindAddress,
      serviceClusterIPRange: c.serviceClusterIPRange,
      serviceNodePortRange: c.serviceNodePortRange,
      clusterCidr: c.clusterCidr,
      nodeCidrMaskSize: c.nodeCidrMaskSize,
      controllers: { scheduler: c.scheduler, endpointSlices: c.endpointSliceController },
      compaction: { intervalMs: c.compactionIntervalSeconds * 1000, retainRevisions: c.retainRevisions },
      synchronous: c.synchronous,
      ...(c.tokenAuthFile ? { tokenAuthFile: c.tokenAuthFile } : {}),
      ...(c.authorizationModes ? { authorizationModes: c.authorizationModes } : {}),
      ...(c.encryptionProviderConfig ? { encryptionProviderConfig: c.encryptionProviderConfig } : {}),
      audit: {
        ...(c.auditLogPath ? { path: c.auditLogPath } : {}),
        ...(c.auditPolicyFile ? { policyFile: c.auditPolicyFile } : {}),
      },
      requestTimeoutMs: c.requestTimeoutMs,
      maxRequestsInflight: c.maxRequestsInflight,
      maxMutatingRequestsInflight: c.maxMutatingRequestsInflight,
      nodeLifecycle: { monitorPeriodMs: c.nodeMonitorPeriodMs, gracePeriodMs: c.nodeMonitorGracePeriodMs },
      defaultTolerationSeconds: {
        notReadySeconds: c.defaultNotReadyTolerationSeconds,
        unreachableSeconds: c.defaultUnreachableTolerationSeconds,
      },
      metricResolutionMs: c.metricResolutionMs,
    });
    ctx.provide(ControlPlaneApi, cp);
    ctx.onStart(() => cp.start());
    ctx.onStop(() => cp.stop());
  },
});
