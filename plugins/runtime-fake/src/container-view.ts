/**
 * What a process in a fake container sees of its container, worked out from what was requested:
 * its hostname and /etc/hostname, /etc/resolv.conf from the sandbox's DNS config, /etc/hosts (the
 * kubelet's mounted file, else one for the pod's IP), files mounted from the host, and the user it
 * runs as. ExecSync's default commands answer from it.
 */
import { readFileSync } from 'node:fs';
import { hostname as nodeHostname } from 'node:os';
import { NamespaceMode } from '@nodelet/cri';
import type { ContainerView } from './exec.js';
import { imageGroup, imageUser } from './image-config.js';
import type { ContainerRecord, SandboxRecord } from './records.js';

/** Users a fake image can name by name (there is no /etc/passwd to read). */
const KNOWN_USERS: Readonly<Record<string, bigint>> = { root: 0n, daemon: 1n, nobody: 65534n };

/**
 * The user and groups the container runs as: the security context's runAsUser / runAsUsername and
 * runAsGroup, else the image's `User` (uid[:gid]), else root; plus supplementalGroups.
 */
export function containerIdentity(c: ContainerRecord): {
  uid: bigint;
  gid: bigint;
  supplementalGroups: readonly bigint[];
} {
  const security = c.config.linux?.securityContext;
  const image = imageUser(c.imageConfig.user);
  const byName = (name: string) => (name === '' ? undefined : (KNOWN_USERS[name] ?? 0n));
  const uid = security?.runAsUser?.value ?? byName(security?.runAsUsername ?? '') ?? image.uid;
  return {
    uid: uid ?? byName(image.username) ?? 0n,
    gid: security?.runAsGroup?.value ?? imageGroup(c.imageConfig.user) ?? 0n,
    supplementalGroups: security?.supplementalGroups ?? [],
  };
}

export function isHostNetwork(s: SandboxRecord): boolean {
  return s.config.linux?.securityContext?.namespaceOptions?.network === NamespaceMode.NODE;
}

/**
 * resolv.conf as containerd writes it for the sandbox: `search`, `nameserver` lines and `options`
 * from the DNS config; with none given, the node's own file (containerd copies it).
 */
export function resolvConf(s: SandboxRecord): string {
  const dns = s.config.dnsConfig;
  let text = '';
  if (dns?.searches.length) text += `search ${dns.searches.join(' ')}\n`;
  for (const server of dns?.servers ?? []) text += `nameserver ${server}\n`;
  if (dns?.options.length) text += `options ${dns.options.join(' ')}\n`;
  return text !== '' ? text : (readHostFile('/etc/resolv.conf') ?? '');
}

/** /etc/hosts of a pod-network sandbox without the kubelet's file: loopback names and the pod's IP. */
export function sandboxHosts(s: SandboxRecord, hostname: string): string {
  let text =
    '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' +
    'fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n';
  if (s.ip !== '') text += `${s.ip}\t${hostname}\n`;
  return text;
}

/** The view of a container for ExecSync; files are read when a command asks for them. */
export function containerView(c: ContainerRecord): ContainerView {
  const s = c.sandbox;
  // A host-network pod, and one that asked for no hostname, keep the node's (a new UTS namespace copies it).
  const hostname = s.config.hostname !== '' ? s.config.hostname : nodeHostname();
  const identity = containerIdentity(c);
  return {
    hostname,
    ...identity,
    readFile(path) {
      const mounted = fromMount(c, path);
      if (mounted !== undefined) return mounted ?? undefined;
      switch (path) {
        case '/etc/hostname':
          return `${hostname}\n`;
        case '/etc/resolv.conf':
          return resolvConf(s);
        case '/etc/hosts':
          return isHostNetwork(s) ? readHostFile('/etc/hosts') : sandboxHosts(s, hostname);
        default:
          return undefined;
      }
    },
  };
}

/**
 * A path under one of the container's mounts (the innermost wins), read from the host: the kubelet
 * mounts /etc/hosts, volumes, and the termination log this way. undefined: not under a mount;
 * null: under one, but the host file cannot be read.
 */
function fromMount(c: ContainerRecord, path: string): string | null | undefined {
  let best: { containerPath: string; hostPath: string } | undefined;
  for (const m of c.config.mounts) {
    const base = m.containerPath.replace(/\/+$/, '');
    if (path !== base && !path.startsWith(`${base}/`)) continue;
    if (!best || base.length > best.containerPath.length)
      best = { containerPath: base, hostPath: m.hostPath };
  }
  if (!best) return undefined;
  return readHostFile(best.hostPath + path.slice(best.containerPath.length)) ?? null;
}

function readHostFile(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}
