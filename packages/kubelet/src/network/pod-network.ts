import type { Pod } from '@nodelet/api';
import type { EventBus, Logger } from '@nodelet/kernel';
import { podDir } from '../volume/paths.js';
import {
  checkResolvConfLimits,
  type DnsSettings,
  type DnsWarning,
  podDnsConfig,
  readHostDnsConfig,
} from './dns.js';
import { ensureHostsFile, shouldMountHostsFile } from './hosts-file.js';
import {
  HOSTNAME_MAX_LENGTH,
  kernelHostname,
  podHostnameAndDomain,
  truncatePodHostname,
} from './hostname.js';
import type { DnsConfig } from './resolv-conf.js';

/** The kubelet's DNS settings (KubeletConfiguration `clusterDNS`, `clusterDomain`, `resolvConf`). */
export interface PodNetworkSettings {
  clusterDNS?: string[];
  clusterDomain?: string;
  /** Default /etc/resolv.conf; '' disables it. */
  resolvConf?: string;
}

export interface PodNetworkDeps {
  rootDir: string;
  nodeIPs: readonly string[];
  logger: Logger;
  bus?: EventBus;
  /** The node's hosts file, copied for host-network pods (tests). */
  nodeHostsPath?: string;
}

/**
 * A pod's names and addresses as the kubelet hands them to the runtime: the sandbox's hostname and DNS
 * config (PodSandboxConfig) and the /etc/hosts file its containers mount. Warnings upstream records as
 * Events go on the pod (`[Kubelet] Pod Event`); those about the node are logged once.
 */
export class PodNetwork {
  readonly dns: DnsSettings;

  constructor(
    settings: PodNetworkSettings,
    private readonly deps: PodNetworkDeps,
  ) {
    this.dns = {
      clusterDNS: settings.clusterDNS ?? [],
      clusterDomain: settings.clusterDomain ?? '',
      resolvConf: settings.resolvConf ?? '/etc/resolv.conf',
      nodeIPs: deps.nodeIPs,
    };
  }

  /**
   * The sandbox's hostname: none for a host-network pod (it keeps the node's); the pod's hostname, or
   * its FQDN with setHostnameAsFQDN. Throws on what upstream refuses (an invalid hostname or subdomain,
   * an FQDN over 64 characters): the sandbox is not created, and the message says why.
   */
  sandboxHostname(pod: Pod): string {
    const hostname = this.hostnameOf(pod);
    const wanted = pod.spec?.hostname || pod.metadata?.name || '';
    if (!pod.spec?.hostNetwork && !hostname.startsWith(wanted)) {
      // Logged when a sandbox is made, as upstream does on each start.
      this.deps.logger.warn('Hostname for pod was too long, truncated it', {
        podName: pod.metadata?.name,
        hostnameMaxLen: HOSTNAME_MAX_LENGTH,
        truncatedHostname: hostname.split('.')[0],
      });
    }
    return hostname;
  }

  /** Like sandboxHostname, for a config that is not used to create a sandbox: never throws, logs nothing. */
  lenientSandboxHostname(pod: Pod): string {
    try {
      return this.hostnameOf(pod);
    } catch {
      const name = pod.spec?.hostname || pod.metadata?.name || '';
      return truncatePodHostname(name, name);
    }
  }

  private hostnameOf(pod: Pod): string {
    if (pod.spec?.hostNetwork) return '';
    const names = podHostnameAndDomain(pod, this.dns.clusterDomain);
    return kernelHostname(names, pod.spec?.setHostnameAsFQDN);
  }

  /** The sandbox's DNS config; reading the node's resolv.conf can fail (the sandbox then waits). */
  async dnsConfig(pod: Pod): Promise<DnsConfig> {
    const host = await readHostDnsConfig(this.dns.resolvConf);
    const { config, warnings } = podDnsConfig(pod, host, this.dns);
    for (const w of warnings) this.warn(pod, w);
    return config;
  }

  /**
   * Writes the pod's /etc/hosts for its IPs and returns its path; undefined while the pod has no IP
   * (nothing is mounted then, as upstream). A host-network pod's IPs are the node's.
   */
  async hostsFile(pod: Pod, podIPs: readonly string[]): Promise<string | undefined> {
    if (!shouldMountHostsFile(podIPs)) return undefined;
    const names = podHostnameAndDomain(pod, this.dns.clusterDomain);
    return ensureHostsFile({
      podDir: podDir(this.deps.rootDir, pod.metadata!.uid!),
      podIPs,
      hostname: names.hostname,
      domain: names.domain,
      aliases: pod.spec?.hostAliases,
      hostNetwork: !!pod.spec?.hostNetwork,
      ...(this.deps.nodeHostsPath ? { nodeHostsPath: this.deps.nodeHostsPath } : {}),
    });
  }

  /**
   * Warns once when the node's resolv.conf leaves pods no room (upstream CheckLimitsForResolvConf, a
   * Warning on the Node at start): too many search domains, or a search path or line too long.
   */
  async checkNodeResolvConf(): Promise<void> {
    if (this.dns.resolvConf === '') return;
    const problem = await checkResolvConfLimits(this.dns);
    if (problem) this.deps.logger.warn(problem, { reason: 'CheckLimitsForResolvConf' });
  }

  private warn(pod: Pod, w: DnsWarning): void {
    if (w.node) {
      this.deps.logger.once(`dns:${w.reason}`, 'warn', w.message);
      return;
    }
    // The pod's Warning event says it; upstream logs no line of its own (a kubelet without cluster
    // DNS — a standalone one — would warn at every new pod).
    this.deps.logger.info(w.message, { pod: `${pod.metadata?.namespace}/${pod.metadata?.name}` });
    const meta = pod.metadata!;
    this.deps.bus?.emit('[Kubelet] Pod Event', {
      podUid: meta.uid!,
      podName: meta.name!,
      namespace: meta.namespace ?? 'default',
      eventType: 'Warning',
      reason: w.reason,
      message: w.message,
    });
  }
}
