import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Container, PodSpec } from '@nodelet/api';
import { Mount } from '@nodelet/cri';

/**
 * The pod's /etc/hosts (upstream kubelet_pods.go: makeHostsMount, ensureHostsFile,
 * managedHostsFileContent, nodeHostsFileContent, hostsEntriesFromHostAliases): a file in the pod's
 * directory, `<root>/pods/<uid>/etc-hosts`, bind-mounted into every container at /etc/hosts.
 *
 * A pod on the pod network gets a managed file: the header, the loopback names, one line per pod IP
 * with its hostname (and FQDN under a subdomain), then `hostAliases`. A host-network pod gets the node's
 * own /etc/hosts under a header of its own, with `hostAliases` appended.
 */

type HostAlias = NonNullable<PodSpec['hostAliases']>[number];

export const ETC_HOSTS = '/etc/hosts';
const MANAGED_HEADER = '# Kubernetes-managed hosts file.\n';
const HOST_NETWORK_HEADER = '# Kubernetes-managed hosts file (host network).\n';

/** Where the kubelet keeps the pod's hosts file (upstream getEtcHostsPath). */
export function etcHostsPath(podDir: string): string {
  return join(podDir, 'etc-hosts');
}

/** `hostAliases` as a section: one line per IP with its names, tab-separated. Empty without aliases. */
export function hostsEntriesFromHostAliases(aliases: readonly HostAlias[] | undefined): string {
  if (!aliases || aliases.length === 0) return '';
  let text = '\n# Entries added by HostAliases.\n';
  for (const a of aliases) text += `${a.ip ?? ''}\t${(a.hostnames ?? []).join('\t')}\n`;
  return text;
}

/** The managed file of a pod on the pod network. */
export function managedHostsFileContent(
  podIPs: readonly string[],
  hostname: string,
  domain: string,
  aliases: readonly HostAlias[] | undefined,
): string {
  let text =
    MANAGED_HEADER +
    '127.0.0.1\tlocalhost\n' +
    '::1\tlocalhost ip6-localhost ip6-loopback\n' +
    'fe00::0\tip6-localnet\n' +
    'fe00::0\tip6-mcastprefix\n' +
    'fe00::1\tip6-allnodes\n' +
    'fe00::2\tip6-allrouters\n';
  for (const ip of podIPs) {
    text += domain !== '' ? `${ip}\t${hostname}.${domain}\t${hostname}\n` : `${ip}\t${hostname}\n`;
  }
  return text + hostsEntriesFromHostAliases(aliases);
}

/** A host-network pod's file: the node's /etc/hosts as it is, with the aliases after it. */
export function nodeHostsFileContent(nodeHosts: string, aliases: readonly HostAlias[] | undefined): string {
  return HOST_NETWORK_HEADER + nodeHosts + hostsEntriesFromHostAliases(aliases);
}

/**
 * Whether containers get the kubelet's file (upstream shouldMountHostsFile): only once the pod has an
 * IP — a host-network pod has the node's.
 */
export function shouldMountHostsFile(podIPs: readonly string[]): boolean {
  return podIPs.length > 0;
}

export interface HostsFileSpec {
  podDir: string;
  podIPs: readonly string[];
  hostname: string;
  domain: string;
  aliases: readonly HostAlias[] | undefined;
  hostNetwork: boolean;
  /** The node's hosts file, for host-network pods (default /etc/hosts). */
  nodeHostsPath?: string;
}

/**
 * Writes the pod's file and returns its path. Rewritten in place each time (truncate and write, not a
 * rename): containers already running have the file's inode bind-mounted, and see the new content.
 */
export async function ensureHostsFile(spec: HostsFileSpec): Promise<string> {
  const path = etcHostsPath(spec.podDir);
  const content = spec.hostNetwork
    ? nodeHostsFileContent(await readFile(spec.nodeHostsPath ?? ETC_HOSTS, 'utf8'), spec.aliases)
    : managedHostsFileContent(spec.podIPs, spec.hostname, spec.domain, spec.aliases);
  await mkdir(spec.podDir, { recursive: true, mode: 0o750 });
  await writeFile(path, content, { mode: 0o644 });
  await chmod(path, 0o644); // as upstream: 0644 whatever the umask left
  return path;
}

/**
 * The hosts mount of one container: none when the container mounts something at /etc/hosts itself
 * (upstream compares the volumeMount's path as written).
 */
export function hostsMount(container: Container, hostsFile: string | undefined): Mount | undefined {
  if (!hostsFile) return undefined;
  if (container.volumeMounts?.some((vm) => vm.mountPath === ETC_HOSTS)) return undefined;
  return Mount.fromPartial({
    containerPath: ETC_HOSTS,
    hostPath: hostsFile,
    readonly: false,
    selinuxRelabel: true,
  });
}
