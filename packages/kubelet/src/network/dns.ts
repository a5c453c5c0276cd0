import { readFile, stat } from 'node:fs/promises';
import { isIPv6 } from 'node:net';
import type { Pod } from '@nodelet/api';
import { type DnsConfig, MAX_RESOLV_CONF_BYTES, parseResolvConf } from './resolv-conf.js';

/**
 * A pod's resolver configuration from its `dnsPolicy` and `dnsConfig` (upstream
 * pkg/kubelet/network/dns GetPodDNS): the sandbox's CRI DNSConfig, from which the runtime writes the
 * pod's /etc/resolv.conf.
 *
 *   dnsPolicy                           base
 *   ─────────────────────────────────   ────────────────────────────────────────────────────────────
 *   ClusterFirst (pod network),         clusterDNS as the only nameservers; search
 *   ClusterFirstWithHostNet             <ns>.svc.<domain> svc.<domain> <domain> + the node's search;
 *                                       options ndots:5 — without clusterDNS: as Default, with a
 *                                       MissingClusterDNS warning
 *   Default, ClusterFirst (hostNetwork) the node's resolv.conf (`resolvConf`); with resolvConf ""
 *                                       the loopback nameserver and search "."
 *   None                                nothing
 *
 * then the pod's `dnsConfig` is appended (duplicates dropped, options merged by name), and the result
 * is cut to upstream's limits with a DNSConfigForming warning.
 */

/** Upstream's limits (pkg/apis/core/validation: MaxDNSNameservers, MaxDNSSearchPaths, MaxDNSSearchListChars). */
export const MAX_DNS_NAMESERVERS = 3;
export const MAX_DNS_SEARCH_PATHS = 32;
export const MAX_DNS_SEARCH_LIST_CHARS = 2048;
/** A longer search path makes some resolvers (glibc 2.28) abort; upstream drops it (DNS1123SubdomainMaxLength). */
const MAX_SEARCH_PATH_LENGTH = 253;

const DEFAULT_DNS_OPTIONS = ['ndots:5'];

export interface DnsSettings {
  /** `clusterDNS`: the cluster DNS service's IPs (empty: none known). */
  clusterDNS: readonly string[];
  /** `clusterDomain` ('' : none). */
  clusterDomain: string;
  /** `resolvConf`: the node's resolver file, the base of Default; '' disables it. */
  resolvConf: string;
  /** The node's IPs: with resolvConf '', one loopback nameserver per address family. */
  nodeIPs: readonly string[];
}

/** A warning upstream records as an Event: on the pod, or (`node`) on the Node. */
export interface DnsWarning {
  reason: 'DNSConfigForming' | 'MissingClusterDNS';
  message: string;
  node?: boolean;
}

export interface PodDns {
  config: DnsConfig;
  warnings: DnsWarning[];
}

type DnsType = 'cluster' | 'host' | 'none';

/** Which base a pod's policy gives (upstream getPodDNSType); an unknown policy is ClusterFirst, as upstream. */
export function podDnsType(pod: Pod): DnsType {
  const policy = pod.spec?.dnsPolicy ?? 'ClusterFirst';
  switch (policy) {
    case 'None':
      return 'none';
    case 'ClusterFirstWithHostNet':
      return 'cluster';
    case 'ClusterFirst':
      return pod.spec?.hostNetwork ? 'host' : 'cluster';
    case 'Default':
      return 'host';
    default:
      return 'cluster';
  }
}

/** `name_namespace(uid)`, as upstream's format.Pod. */
export function formatPod(pod: Pod): string {
  const m = pod.metadata ?? {};
  return `${m.name ?? ''}_${m.namespace ?? 'default'}(${m.uid ?? ''})`;
}

/**
 * The pod's DNS config from the node's parsed resolv.conf (`host`; empty when resolvConf is '').
 * Pure: the caller reads the file and records the warnings.
 */
export function podDnsConfig(pod: Pod, host: DnsConfig, settings: DnsSettings): PodDns {
  const warnings: DnsWarning[] = [];
  let config: DnsConfig = {
    servers: [...host.servers],
    searches: [...host.searches],
    options: [...host.options],
  };
  let type = podDnsType(pod);
  if (type === 'none') config = { servers: [], searches: [], options: [] };
  if (type === 'cluster') {
    if (settings.clusterDNS.length > 0) {
      // The cluster DNS service forwards what it cannot answer itself: it is the only nameserver.
      config.servers = [...settings.clusterDNS];
      config.searches = clusterSearches(pod, config.searches, settings.clusterDomain);
      config.options = [...DEFAULT_DNS_OPTIONS];
    } else {
      const message =
        'kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. ' +
        'Falling back to "Default" policy.';
      warnings.push({ reason: 'MissingClusterDNS', message, node: true });
      warnings.push({ reason: 'MissingClusterDNS', message: `pod: "${formatPod(pod)}". ${message}` });
      type = 'host';
    }
  }
  if (type === 'host' && settings.resolvConf === '') {
    // No node file: "the nameserver on the local machine", and no search.
    for (const ip of settings.nodeIPs) config.servers.push(isIPv6(ip) ? '::1' : '127.0.0.1');
    if (config.servers.length === 0) config.servers.push('127.0.0.1');
    config.searches = ['.'];
  }
  const extra = pod.spec?.dnsConfig;
  if (extra) {
    config.servers = unique([...config.servers, ...(extra.nameservers ?? [])]);
    config.searches = unique([...config.searches, ...(extra.searches ?? [])]);
    config.options = mergeDnsOptions(config.options, extra.options ?? []);
  }
  config.servers = nameserversFitLimits(config.servers, warnings);
  config.searches = searchesFitLimits(config.searches, warnings);
  return { config, warnings };
}

function clusterSearches(pod: Pod, hostSearches: string[], domain: string): string[] {
  if (domain === '') return hostSearches;
  const ns = pod.metadata?.namespace ?? 'default';
  return unique([`${ns}.svc.${domain}`, `svc.${domain}`, domain, ...hostSearches]);
}

function unique(values: readonly string[]): string[] {
  return [...new Set(values)];
}

/**
 * The node's options with the pod's over them, by name (`ndots:5` + `{name: ndots, value: "2"}` →
 * `ndots:2`; an option without a value is its name alone). Upstream builds the list from a Go map, so
 * its order varies from run to run; here it is stable: the node's options in their order, then the
 * pod's new ones in theirs.
 */
export function mergeDnsOptions(
  existing: readonly string[],
  pod: readonly { name?: string; value?: string }[],
): string[] {
  const merged = new Map<string, string>();
  for (const op of existing) {
    const i = op.indexOf(':');
    if (i === -1) merged.set(op, '');
    else merged.set(op.slice(0, i), op.slice(i + 1));
  }
  for (const op of pod) merged.set(op.name ?? '', op.value ?? '');
  return [...merged].map(([name, value]) => (value !== '' ? `${name}:${value}` : name));
}

function nameserversFitLimits(servers: string[], warnings: DnsWarning[]): string[] {
  if (servers.length <= MAX_DNS_NAMESERVERS) return servers;
  const kept = servers.slice(0, MAX_DNS_NAMESERVERS);
  warnings.push({
    reason: 'DNSConfigForming',
    message: `Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: ${kept.join(' ')}`,
  });
  return kept;
}

/**
 * At most 32 search paths, none longer than 253 characters, and a search line of at most 2048: paths
 * past the count are cut, too-long ones dropped, then paths are cut from the end until the line fits.
 */
function searchesFitLimits(searches: string[], warnings: DnsWarning[]): string[] {
  let exceeded = false;
  let kept = searches;
  if (kept.length > MAX_DNS_SEARCH_PATHS) {
    kept = kept.slice(0, MAX_DNS_SEARCH_PATHS);
    exceeded = true;
  }
  const short = kept.filter((s) => s.length <= MAX_SEARCH_PATH_LENGTH);
  if (short.length !== kept.length) exceeded = true;
  kept = short;
  let lineLength = kept.join(' ').length;
  if (lineLength > MAX_DNS_SEARCH_LIST_CHARS) {
    while (kept.length > 0 && lineLength > MAX_DNS_SEARCH_LIST_CHARS) {
      lineLength -= kept[kept.length - 1]!.length + 1;
      kept = kept.slice(0, -1);
    }
    exceeded = true;
  }
  if (exceeded) {
    warnings.push({
      reason: 'DNSConfigForming',
      message: `Search Line limits were exceeded, some search paths have been omitted, the applied search line is: ${kept.join(' ')}`,
    });
  }
  return kept;
}

/** Reads and parses the node's resolv.conf; '' gives an empty config (the file is disabled). */
export async function readHostDnsConfig(path: string): Promise<DnsConfig> {
  if (path === '') return { servers: [], searches: [], options: [] };
  try {
    const size = (await stat(path)).size;
    if (size > MAX_RESOLV_CONF_BYTES) throw new Error(`${path}: the read limit is reached`);
    return parseResolvConf(await readFile(path, 'utf8'));
  } catch (err) {
    // Worded as Go's os.Open error, which is what upstream's status and events show.
    const reason = ERRNO_TEXT[(err as NodeJS.ErrnoException).code ?? ''];
    throw reason ? new Error(`open ${path}: ${reason}`) : err;
  }
}

const ERRNO_TEXT: Record<string, string> = {
  ENOENT: 'no such file or directory',
  EACCES: 'permission denied',
  EISDIR: 'is a directory',
  ENOTDIR: 'not a directory',
};

/**
 * What is wrong with the node's resolv.conf for pods (upstream CheckLimitsForResolvConf, checked once
 * at start): too many search domains to leave room for the cluster's three, a search path too long, a
 * search line too long. undefined: nothing.
 */
export async function checkResolvConfLimits(settings: DnsSettings): Promise<string | undefined> {
  let host: DnsConfig;
  try {
    host = await readHostDnsConfig(settings.resolvConf);
  } catch (err) {
    return (err as Error).message;
  }
  const path = settings.resolvConf;
  const domainLimit = MAX_DNS_SEARCH_PATHS - (settings.clusterDomain !== '' ? 3 : 0);
  if (host.searches.length > domainLimit) {
    return `Resolv.conf file '${path}' contains search line consisting of more than ${domainLimit} domains!`;
  }
  if (host.searches.some((s) => s.length > MAX_SEARCH_PATH_LENGTH)) {
    return `Resolv.conf file "${path}" contains a search path which length is more than allowed ${MAX_SEARCH_PATH_LENGTH} chars!`;
  }
  if (host.searches.join(' ').length > MAX_DNS_SEARCH_LIST_CHARS) {
    return `Resolv.conf file '${path}' contains search line which length is more than allowed ${MAX_DNS_SEARCH_LIST_CHARS} chars!`;
  }
  return undefined;
}
