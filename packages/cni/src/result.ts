/**
 * A CNI ADD result, normalised to the shape of CNI spec 1.x (whatever version the plugin spoke: 0.3.x and
 * 0.4.0 results carry an extra `version` per IP, 0.1/0.2 results an `ip4`/`ip6` pair; both are converted).
 */
export interface CniResult {
  /** The version the plugin answered in (the result's own `cniVersion`). */
  readonly cniVersion: string;
  readonly interfaces: readonly CniInterface[];
  readonly ips: readonly CniIpConfig[];
  readonly routes: readonly CniRoute[];
  readonly dns: CniDns;
}

export interface CniInterface {
  readonly name: string;
  readonly mac?: string;
  readonly mtu?: number;
  /** The netns path for interfaces inside the pod; absent for host interfaces (bridge, veth peer). */
  readonly sandbox?: string;
  readonly socketPath?: string;
  readonly pciID?: string;
}

export interface CniIpConfig {
  /** CIDR notation, e.g. `10.123.4.2/24`. */
  readonly address: string;
  readonly gateway?: string;
  /** Index into `interfaces` of the interface this address is on. */
  readonly interface?: number;
}

export interface CniRoute {
  readonly dst: string;
  readonly gw?: string;
  readonly mtu?: number;
  readonly advmss?: number;
  readonly priority?: number;
  readonly table?: number;
  readonly scope?: number;
}

export interface CniDns {
  readonly nameservers?: readonly string[];
  readonly domain?: string;
  readonly search?: readonly string[];
  readonly options?: readonly string[];
}

/** What `setUpPod` resolves to: the pod's addresses as the kubelet reports them, plus the full result. */
export interface PodNetworkStatus {
  /** The network's `name` from its configuration. */
  readonly network: string;
  /**
   * The pod IPs: addresses on the pod's interface (`ifName`, inside the netns), without prefix length,
   * IPv4 before IPv6 — `ips[0]` is `status.podIP`, all of them `status.podIPs`.
   */
  readonly ips: readonly string[];
  /** Every interface the attachment created (host side included), as the plugins reported them. */
  readonly interfaces: readonly CniInterface[];
  /** The gateway of the primary pod IP, when the plugins named one. */
  readonly gateway?: string;
  readonly routes: readonly CniRoute[];
  readonly dns: CniDns;
  /** The final result of the chain, normalised. */
  readonly result: CniResult;
}
