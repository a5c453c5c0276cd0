import { isIP } from 'node:net';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseGoDuration } from '@nodelet/api';
import { intFlag, parseFlags } from './args.js';
import { CliError } from './errors.js';
import {
  controlPlaneLoopHelp,
  controlPlaneLoopOptions,
  type ControlPlaneLoopFlags,
  parseControlPlaneLoopFlags,
} from './control-plane-flags.js';

// The flags and help of `nodelet up`: they load nothing heavy (the command imports the rest only to run).

export const upHelp = `Run a Kubernetes cluster in one process: the embedded control plane (API server on SQLite, scheduler,
EndpointSlice controller) that kubectl and @kubernetes/client-node talk to over HTTPS, a kubelet per
node that joins it, and the proxy, so the ClusterIPs of its Services answer on this host.

Usage:
  nodelet up [flags]

Flags:
  --data-dir DIR      state: state.db (SQLite), pki/ (CA and certificates), kubeconfig (default ~/.nodelet);
                      made (or tightened to) owner-only: 0700 directories, 0600 files
  --port PORT         HTTPS port of the API server; 0 picks a free one (default 6443)
  --address IP        address the API server binds to and advertises in the kubernetes Service
                      (default 127.0.0.1; pods reach the API only at an address of the node)
  --runtime NAME      container runtime of the node: fake | containerd (default fake)
  --nodes N           simulated nodes on the fake runtime (default 1)
  --hostname-override NAME
                      name of the node, or of nodes NAME-1..NAME-N (default: the hostname)
  --cluster-cidr CIDR pod IPs of the cluster: each node gets the next /24 of it in spec.podCIDR, its
                      pods' IPs on the fake runtime (kube-controller-manager's flag; default 10.244.0.0/16,
                      256 nodes)
  --proxy-mode MODE   the proxy: iptables | nftables | ipvs | userspace | none (default: as root,
                      iptables if installed, else nftables if nft is, else userspace; userspace
                      without root; none runs no proxy)
  --config FILE       a NodeletConfiguration whose proxy: section configures the proxy, as for
                      nodelet proxy --config (mode, iptables/nftables/ipvs sections, minSyncPeriod, …),
                      and whose kubelet: section (kubeletConfig: evictionHard, …) and plugins (e.g.
                      runtime-fake's simulated node: memory, disk, usage) configure every node
  --token-auth-file FILE
                      static bearer tokens, one token,user,uid,"group1,group2" line each
                      (kube-apiserver's --token-auth-file)
  --authorization-mode MODES
                      the API server's authorization chain, comma-separated: Node, RBAC,
                      AlwaysAllow, AlwaysDeny (default Node,RBAC, as kubeadm)
  --encryption-provider-config FILE
                      an EncryptionConfiguration (apiserver.config.k8s.io/v1): the resources it lists
                      are encrypted in state.db with aesgcm or aescbc (kube-apiserver's flag)
  --audit-log-path FILE
                      append an audit.k8s.io/v1 Event per request stage as JSON lines (- for stdout),
                      at the levels of --audit-policy-file (kube-apiserver's flags; off by default)
  --audit-policy-file FILE
                      an audit.k8s.io/v1 Policy: the first matching rule sets a request's level
  --request-timeout DURATION
                      a request that is not long-running (watches, logs, exec, attach, port-forward
                      and proxy are) is answered 504 after this long; 0 never (default 1m0s)
  --max-requests-inflight N
                      read-only requests served at once; more are answered 429 with Retry-After
                      (members of system:masters never are); 0 no limit (default 400)
  --max-mutating-requests-inflight N
                      the same for creates, updates, patches and deletes (default 200)
${controlPlaneLoopHelp.trimEnd()}
  --user NAME=ROLE    write <data-dir>/users/NAME.kubeconfig (a client certificate for NAME) and bind
                      NAME to the ClusterRole ROLE (view, edit, admin, …); may be repeated
  --v N               log verbosity: 0-1 info, 2 and up debug (default 0)
  -h, --help          show this help

The admin kubeconfig (system:masters) is written to <data-dir>/kubeconfig; node N's state is under
<data-dir>/nodes/<N>. Every other identity gets what RBAC and the Node authorizer grant it.
Objects survive a restart with the same --data-dir. Stop it with SIGINT or SIGTERM.

The proxy lists and watches Services and EndpointSlices of the embedded API server, as the first node
(Local traffic policies). Services get ClusterIPs from 10.96.0.0/12: iptables and nftables program this
host (DNAT to pod IPs), userspace listens on 127.0.0.1 at each service port. Rules stay in force when
nodelet up stops, so running pods stay reachable; nodelet proxy --cleanup removes them.

Examples:
  nodelet up
  kubectl --kubeconfig ~/.nodelet/kubeconfig get nodes
  nodelet up --user alice=view && kubectl --kubeconfig ~/.nodelet/users/alice.kubeconfig auth can-i --list
  sudo nodelet up --runtime containerd --proxy-mode nftables
`;

const options = {
  'data-dir': { type: 'string' },
  port: { type: 'string' },
  address: { type: 'string' },
  runtime: { type: 'string' },
  nodes: { type: 'string' },
  'hostname-override': { type: 'string' },
  'cluster-cidr': { type: 'string' },
  'proxy-mode': { type: 'string' },
  config: { type: 'string' },
  'token-auth-file': { type: 'string' },
  'encryption-provider-config': { type: 'string' },
  'audit-log-path': { type: 'string' },
  'audit-policy-file': { type: 'string' },
  'request-timeout': { type: 'string' },
  'max-requests-inflight': { type: 'string' },
  'max-mutating-requests-inflight': { type: 'string' },
  user: { type: 'string', multiple: true },
  'authorization-mode': { type: 'string' },
  ...controlPlaneLoopOptions,
  v: { type: 'string', short: 'v' },
  help: { type: 'boolean', short: 'h' },
} as const;

export interface UpFlags {
  dataDir: string;
  port: number;
  address: string;
  runtime: 'fake' | 'containerd';
  nodes: number;
  hostnameOverride?: string;
  /** kube-controller-manager's --cluster-cidr: node pod CIDRs (/24 each) are cut from it. */
  clusterCidr?: string;
  /** Undefined: from --config, else iptables as root and userspace otherwise. */
  proxyMode?: string;
  config?: string;
  /** kube-apiserver's --token-auth-file. */
  tokenAuthFile?: string;
  /** kube-apiserver's --encryption-provider-config. */
  encryptionProviderConfig?: string;
  /** kube-apiserver's --audit-log-path (`-`: stdout) and --audit-policy-file. */
  auditLogPath?: string;
  auditPolicyFile?: string;
  /** kube-apiserver's --request-timeout, in ms (0: none). */
  requestTimeoutMs?: number;
  /** kube-apiserver's --max-requests-inflight and --max-mutating-requests-inflight (0: no limit). */
  maxRequestsInflight?: number;
  maxMutatingRequestsInflight?: number;
  /** `--user alice=view`: a kubeconfig for each user, bound to the ClusterRole. */
  users: { name: string; clusterRole: string }[];
  /** kube-apiserver's --authorization-mode, as listed (checked by the control plane's config schema). */
  authorizationModes?: string[];
  /** How node failures are handled and how often metrics are scraped (control-plane-flags.ts). */
  controlPlaneLoops: ControlPlaneLoopFlags;
  v: number;
}

export function parseUpArgs(args: readonly string[]): { help: boolean; flags: UpFlags } {
  const { values, positionals } = parseFlags(args, options, 'nodelet up');
  if (positionals.length > 0) {
    throw new CliError(`unexpected argument ${JSON.stringify(positionals[0])}; see nodelet up --help`);
  }
  const runtime = values.runtime ?? 'fake';
  if (runtime !== 'fake' && runtime !== 'containerd') {
    throw new CliError(`flag --runtime must be fake or containerd, got ${JSON.stringify(runtime)}`);
  }
  const nodes = intFlag('nodes', values.nodes, 1, 1000) ?? 1;
  if (runtime === 'containerd' && nodes !== 1) {
    throw new CliError(
      'flag --nodes simulates nodes on the fake runtime; with --runtime containerd there is one node',
    );
  }
  const hostnameOverride = values['hostname-override']?.trim().toLowerCase();
  // The name becomes a directory under --data-dir and a certificate subject: a DNS subdomain only.
  if (hostnameOverride !== undefined && !/^[a-z0-9]([-a-z0-9.]{0,240}[a-z0-9])?$/.test(hostnameOverride)) {
    throw new CliError(
      `flag --hostname-override must be a node name (lowercase letters, digits, '-' and '.'), got ${JSON.stringify(values['hostname-override'])}`,
    );
  }
  // An address, not a name: it is advertised to pods in the kubernetes EndpointSlice.
  if (values.address !== undefined && !isIP(values.address)) {
    throw new CliError(
      `flag --address must be an IP address of this machine (e.g. 127.0.0.1, 0.0.0.0 or the CNI bridge's 10.88.0.1), got ${JSON.stringify(values.address)}`,
    );
  }
  const clusterCidr = values['cluster-cidr']?.trim();
  if (clusterCidr !== undefined && !isClusterCidr(clusterCidr)) {
    throw new CliError(
      `flag --cluster-cidr must be an IPv4 CIDR with a prefix from /8 to /24 (each node gets a /24 of it), such as 10.244.0.0/16, got ${JSON.stringify(values['cluster-cidr'])}`,
    );
  }
  // One /24 per node: more nodes than the range holds would share pod IPs.
  const nodeCidrs = 2 ** (24 - Number((clusterCidr ?? '10.244.0.0/16').split('/')[1]));
  if (nodes > nodeCidrs) {
    const prefix = 24 - Math.ceil(Math.log2(nodes));
    throw new CliError(
      `flag --nodes ${nodes} needs a /24 pod CIDR per node, but --cluster-cidr ${clusterCidr ?? '10.244.0.0/16'} holds ${nodeCidrs}; give a larger range, e.g. --cluster-cidr 10.0.0.0/${prefix}`,
    );
  }
  const users = (values.user ?? []).map((spec) => {
    const m = /^([A-Za-z0-9:._@-]+)=([A-Za-z0-9:._-]+)$/.exec(spec);
    if (!m) {
      throw new CliError(
        `flag --user must be NAME=CLUSTERROLE (e.g. --user alice=view), got ${JSON.stringify(spec)}`,
      );
    }
    return { name: m[1]!, clusterRole: m[2]! };
  });
  const modes = values['authorization-mode']?.split(',').map((m) => m.trim());
  if (modes && modes.some((m) => m === '')) {
    throw new CliError(
      `flag --authorization-mode must list modes separated by commas (e.g. Node,RBAC), got ${JSON.stringify(values['authorization-mode'])}`,
    );
  }
  const requestTimeout = values['request-timeout'];
  const requestTimeoutMs = requestTimeout === undefined ? undefined : parseGoDuration(requestTimeout.trim());
  if (requestTimeout !== undefined && requestTimeoutMs === undefined) {
    throw new CliError(
      `flag --request-timeout must be a duration such as 60s, 1m30s or 0, got ${JSON.stringify(requestTimeout)}`,
    );
  }
  const maxRequestsInflight = intFlag('max-requests-inflight', values['max-requests-inflight'], 0, 1_000_000);
  const maxMutatingRequestsInflight = intFlag(
    'max-mutating-requests-inflight',
    values['max-mutating-requests-inflight'],
    0,
    1_000_000,
  );
  return {
    help: !!values.help,
    flags: {
      dataDir: resolve(values['data-dir'] ?? join(homedir(), '.nodelet')),
      port: intFlag('port', values.port, 0, 65535) ?? 6443,
      address: values.address ?? '127.0.0.1',
      runtime,
      nodes,
      hostnameOverride,
      ...(clusterCidr !== undefined ? { clusterCidr } : {}),
      ...(values['proxy-mode'] !== undefined ? { proxyMode: values['proxy-mode'] } : {}),
      ...(values.config !== undefined ? { config: resolve(values.config) } : {}),
      ...(values['token-auth-file'] !== undefined
        ? { tokenAuthFile: resolve(values['token-auth-file']) }
        : {}),
      ...(values['encryption-provider-config'] !== undefined
        ? { encryptionProviderConfig: resolve(values['encryption-provider-config']) }
        : {}),
      ...(values['audit-log-path'] !== undefined
        ? { auditLogPath: values['audit-log-path'] === '-' ? '-' : resolve(values['audit-log-path']) }
        : {}),
      ...(values['audit-policy-file'] !== undefined
        ? { auditPolicyFile: resolve(values['audit-policy-file']) }
        : {}),
      ...(requestTimeoutMs !== undefined ? { requestTimeoutMs } : {}),
      ...(maxRequestsInflight !== undefined ? { maxRequestsInflight } : {}),
      ...(maxMutatingRequestsInflight !== undefined ? { maxMutatingRequestsInflight } : {}),
      users,
      ...(modes ? { authorizationModes: modes } : {}),
      controlPlaneLoops: parseControlPlaneLoopFlags(values),
      v: intFlag('v', values.v?.replace(/^=/, ''), 0, 10) ?? 0,
    },
  };
}

/** An IPv4 CIDR that holds at least one /24 node CIDR. */
function isClusterCidr(text: string): boolean {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/.exec(text);
  if (!m || m.slice(1, 5).some((o) => Number(o) > 255)) return false;
  return Number(m[5]) >= 8 && Number(m[5]) <= 24;
}
