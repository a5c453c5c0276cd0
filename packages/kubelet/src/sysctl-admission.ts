import type { Pod } from '@nodelet/api';
import type { AdmitResult } from './admission.js';

/**
 * Which `securityContext.sysctls` a pod may set (upstream pkg/kubelet/sysctl): the safe ones —
 * namespaced and isolated from other pods — always; others only when the KubeletConfiguration's
 * `allowedUnsafeSysctls` names them (an entry ending in `*` is a prefix), and only those the kernel
 * namespaces (IPC: `kernel.shm*`, `kernel.msg*`, `kernel.sem`, `fs.mqueue.*`; network: `net.*`). A pod
 * asking for another is rejected at admission, reason `SysctlForbidden`.
 */

/** Upstream's safe set (v1.34; every entry is available on the kernels nodelet supports). */
export const SAFE_SYSCTLS: readonly string[] = [
  'kernel.shm_rmid_forced',
  'net.ipv4.ip_local_port_range',
  'net.ipv4.tcp_syncookies',
  'net.ipv4.ping_group_range',
  'net.ipv4.ip_unprivileged_port_start',
  'net.ipv4.ip_local_reserved_ports',
  'net.ipv4.tcp_keepalive_time',
  'net.ipv4.tcp_fin_timeout',
  'net.ipv4.tcp_keepalive_intvl',
  'net.ipv4.tcp_keepalive_probes',
  'net.ipv4.tcp_rmem',
  'net.ipv4.tcp_wmem',
];

type Namespace = 'ipc' | 'net';

const NAMESPACED: readonly [prefix: string, exact: boolean, ns: Namespace][] = [
  ['kernel.sem', true, 'ipc'],
  ['kernel.shm', false, 'ipc'],
  ['kernel.msg', false, 'ipc'],
  ['fs.mqueue.', false, 'ipc'],
  ['net.', false, 'net'],
];

/** The namespace a sysctl (or a `prefix*` pattern) lives in; undefined when the kernel does not namespace it. */
export function sysctlNamespace(name: string): Namespace | undefined {
  const bare = name.endsWith('*') ? name.slice(0, -1) : name;
  for (const [prefix, exact, ns] of NAMESPACED) {
    if (exact ? bare === prefix : bare.startsWith(prefix)) return ns;
  }
  return undefined;
}

/** `net/ipv4/ip_forward` → `net.ipv4.ip_forward` (upstream NormalizeName: slashes when the first separator is one). */
export function normalizeSysctlName(name: string): string {
  const firstSep = name.search(/[./]/);
  if (firstSep < 0 || name[firstSep] !== '/') return name;
  return name.replace(/[./]/g, (c) => (c === '/' ? '.' : '/'));
}

export class SysctlAllowlist {
  private readonly exact = new Map<string, Namespace>();
  private readonly prefixes = new Map<string, Namespace>();

  /** Throws, naming the entry, when `allowedUnsafeSysctls` lists one the kernel does not namespace. */
  constructor(allowedUnsafe: readonly string[] = []) {
    for (const entry of [...SAFE_SYSCTLS, ...allowedUnsafe]) {
      const ns = sysctlNamespace(entry);
      if (!ns) {
        throw new Error(
          `allowedUnsafeSysctls: ${JSON.stringify(entry)} is not known to be namespaced (only kernel.shm*, kernel.msg*, kernel.sem, fs.mqueue.* and net.* are); a pod cannot set it for itself`,
        );
      }
      if (entry.endsWith('*')) this.prefixes.set(entry.slice(0, -1), ns);
      else this.exact.set(entry, ns);
    }
  }

  /** Upstream patternAllowlist.Admit: the first sysctl the pod may not set rejects it. */
  admit(pod: Pod): AdmitResult {
    for (const { name } of pod.spec?.securityContext?.sysctls ?? []) {
      const problem = this.check(normalizeSysctlName(name), !!pod.spec?.hostNetwork, !!pod.spec?.hostIPC);
      if (problem)
        return { admit: false, reason: 'SysctlForbidden', message: `forbidden sysctl: ${problem}` };
    }
    return { admit: true };
  }

  private check(name: string, hostNet: boolean, hostIPC: boolean): string | undefined {
    let ns = this.exact.get(name);
    if (!ns) for (const [prefix, n] of this.prefixes) if (name.startsWith(prefix)) ns = n;
    if (!ns) return `${JSON.stringify(name)} not allowlisted`;
    if ((ns === 'ipc' && hostIPC) || (ns === 'net' && hostNet)) {
      return `${JSON.stringify(name)} not allowed with host ${ns} enabled`;
    }
    return undefined;
  }
}

/** Upstream's OS check at admission: a pod for another OS (`spec.os.name`) is not run here. */
export function admitPodOS(pod: Pod, os: string = process.platform): AdmitResult {
  const wanted = pod.spec?.os?.name;
  if (wanted === undefined || wanted === os) return { admit: true };
  return {
    admit: false,
    reason: 'PodOSNotSupported',
    message: "Failed to admit pod as the OS field doesn't match node OS",
  };
}
