import type { Clock, Logger } from '@nodelet/kernel';
import type { AuthorizationMode } from './authorization/modes.js';
import type { SlowClientTimeouts } from './apiserver/filters/slow-clients.js';
import type { ServerVersion } from './apiserver/server.js';
import type { AuditLogOptions } from './audit/audit-log.js';
import type { DefaultTolerationSecondsOptions } from './admission/default-toleration-seconds.js';
import type { NodeLifecycleOptions } from './controllers/node-lifecycle-controller.js';

/**
 * The embedded control plane: the revision store, the API server on HTTPS, and the controllers a node
 * cluster needs, in one object with a start and a stop. `nodelet up` hosts it as the `controlplane`
 * plugin; tests and embedders may construct it directly.
 */
export interface ControlPlaneOptions {
  /** State: `state.db` (SQLite), `pki/`, `kubeconfig`. */
  dataDir: string;
  clock: Clock;
  logger: Logger;
  /** HTTPS port; 0 picks a free one (default 6443). */
  port?: number;
  /** Address to bind (default 127.0.0.1). */
  bindAddress?: string;
  /** ClusterIP range (default 10.96.0.0/12). */
  serviceClusterIPRange?: string;
  /** NodePort range (default 30000-32767). */
  serviceNodePortRange?: string;
  /** Pod IPs of the cluster, cut into one node CIDR per Node (kube-controller-manager's --cluster-cidr; default 10.244.0.0/16). */
  clusterCidr?: string;
  /** The prefix length of each Node's pod CIDR (--node-cidr-mask-size; default 24). */
  nodeCidrMaskSize?: number;
  /** Run the in-process controllers (default true). */
  controllers?: {
    scheduler?: boolean;
    endpointSlices?: boolean;
    workloads?: boolean;
    /** The node IPAM controller (each Node's podCIDR). */
    nodeIpam?: boolean;
    /** The node lifecycle and taint eviction controllers. */
    nodeLifecycle?: boolean;
  };
  /**
   * kube-controller-manager's --node-monitor-period (5 s) and --node-monitor-grace-period (50 s): how
   * often node health is checked, and how long a node may go without renewing its Lease or posting
   * status before its conditions turn Unknown.
   */
  nodeLifecycle?: NodeLifecycleOptions;
  /**
   * kube-apiserver's --default-not-ready-toleration-seconds and --default-unreachable-toleration-seconds
   * (300 each): the tolerations the DefaultTolerationSeconds admission gives every pod.
   */
  defaultTolerationSeconds?: DefaultTolerationSecondsOptions;
  /** metrics-server's --metric-resolution (15 s): how often the kubelets' resource metrics are scraped. */
  metricResolutionMs?: number;
  /** Every `intervalMs`, history older than the newest `retainRevisions` revisions is compacted. */
  compaction?: { intervalMs?: number; retainRevisions?: number };
  /** How long Events live (default 1 h). */
  eventTtlMs?: number;
  bookmarkIntervalMs?: number;
  /** SQLite `synchronous`: NORMAL (default) or FULL. */
  synchronous?: 'NORMAL' | 'FULL';
  /** Extra controllers and hooks: called after the server is up (issue 6 adds the kubelet here). */
  version?: string;
  /**
   * Admission plugins not to run (upstream's --disable-admission-plugins): `ServiceAccount`,
   * `NodeRestriction`, `DefaultTolerationSeconds`. All run by default.
   */
  disableAdmissionPlugins?: readonly string[];
  /** The `iss` of service-account tokens (default https://kubernetes.default.svc.cluster.local). */
  serviceAccountIssuer?: string;
  /** The audiences API requests' tokens must name one of (default: the issuer). */
  apiAudiences?: string[];
  /**
   * Pod-bound tokens asked for 3607 s (what every pod's kube-api-access volume asks) are valid for a
   * year and only warn after 3607 s (upstream's --service-account-extend-token-expiration; default true).
   */
  extendTokenExpiration?: boolean;
  /** Static bearer tokens (kube-apiserver's --token-auth-file: `token,user,uid,"groups"` lines). */
  tokenAuthFile?: string;
  /**
   * Paths a request without credentials may read as system:anonymous (default /healthz, /livez,
   * /readyz, /version and below; [] turns anonymous off).
   */
  anonymousPaths?: readonly string[];
  /** The authorization chain (kube-apiserver's --authorization-mode; default Node, RBAC). */
  authorizationModes?: readonly AuthorizationMode[];
  /**
   * An EncryptionConfiguration file (kube-apiserver's --encryption-provider-config): the resources it
   * lists (Secrets, …) are encrypted in state.db, current objects and history alike.
   */
  encryptionProviderConfig?: string;
  /** kube-apiserver's --audit-log-path (a file, or `-` for stdout) and --audit-policy-file: both or none. */
  audit?: AuditLogOptions;
  /**
   * Requests that are not long-running (watches, logs, exec, attach, port-forward and proxy are) are
   * answered 504 after this long (upstream's --request-timeout, default 60 s; 0: never).
   */
  requestTimeoutMs?: number;
  /** Read-only requests served at once; more are answered 429 (--max-requests-inflight, default 400; 0: no limit). */
  maxRequestsInflight?: number;
  /** Mutating requests served at once (--max-mutating-requests-inflight, default 200; 0: no limit). */
  maxMutatingRequestsInflight?: number;
  /** A watch whose client leaves more than this unread is cut off (default 32 MiB). */
  maxWatchBufferBytes?: number;
  /** How long a client may take to send its headers and its whole request (default 32 s and the request timeout). */
  slowClients?: Partial<SlowClientTimeouts>;
}

export interface Controller {
  start(): void;
  stop(): void;
}

/** The Kubernetes version nodelet's API matches (its schemas are @kubernetes/client-node's, v1.34). */
export const kubernetesVersion = { major: '1', minor: '34', gitVersion: 'v1.34.0' };

/** The version the API server reports (`kubectl version`): upstream's, marked as nodelet's. */
export function serverVersion(nodeletVersion = '0.1.0'): ServerVersion {
  return {
    ...kubernetesVersion,
    gitVersion: `${kubernetesVersion.gitVersion}+nodelet-${nodeletVersion}`,
    gitCommit: '',
    gitTreeState: 'clean',
    buildDate: '1970-01-01T00:00:00Z',
    goVersion: `node ${process.version}`,
    compiler: 'nodelet',
    platform: `${process.platform}/${process.arch === 'x64' ? 'amd64' : process.arch}`,
  };
}

/** The request filters' settings of the API server, from the control plane's options. */
export function requestLimits(o: ControlPlaneOptions) {
  return {
    ...(o.requestTimeoutMs !== undefined ? { requestTimeoutMs: o.requestTimeoutMs } : {}),
    inFlight: {
      ...(o.maxRequestsInflight !== undefined ? { maxReadOnly: o.maxRequestsInflight } : {}),
      ...(o.maxMutatingRequestsInflight !== undefined ? { maxMutating: o.maxMutatingRequestsInflight } : {}),
    },
    ...(o.maxWatchBufferBytes !== undefined ? { maxWatchBufferBytes: o.maxWatchBufferBytes } : {}),
    ...(o.slowClients ? { slowClients: o.slowClients } : {}),
  };
}
