import { join } from 'node:path';
import type { Container, Pod, SecurityContext } from '@nodelet/api';
import {
  type Image,
  type LinuxContainerSecurityContext,
  type LinuxSandboxSecurityContext,
  type SecurityProfile,
  SecurityProfile_ProfileType,
} from '@nodelet/cri';
import { formatPod } from '../lifecycle/hook-runner.js';

/**
 * A pod's and its containers' `securityContext` in CRI terms, as upstream's kuberuntime
 * (security_context.go, kuberuntime_sandbox_linux.go) and pkg/securitycontext make it.
 */

/** Paths the runtime masks in a container unless `procMount: Unmasked` (upstream defaultMaskedPaths). */
export const DEFAULT_MASKED_PATHS: readonly string[] = [
  '/proc/asound',
  '/proc/acpi',
  '/proc/kcore',
  '/proc/keys',
  '/proc/latency_stats',
  '/proc/timer_list',
  '/proc/timer_stats',
  '/proc/sched_debug',
  '/proc/scsi',
  '/sys/firmware',
  '/sys/devices/virtual/powercap',
];

/** Paths the runtime makes read-only unless `procMount: Unmasked` (upstream defaultReadonlyPaths). */
export const DEFAULT_READONLY_PATHS: readonly string[] = [
  '/proc/bus',
  '/proc/fs',
  '/proc/irq',
  '/proc/sys',
  '/proc/sysrq-trigger',
];

export interface SecurityOptions {
  /** Where `seccompProfile.localhostProfile` names a file (upstream: `<root-dir>/seccomp`). */
  seccompProfileRoot: string;
  /** KubeletConfiguration `seccompDefault`: RuntimeDefault for containers that set no profile. */
  seccompDefault: boolean;
}

/**
 * The container's security context with the pod's filled in where the container sets nothing
 * (upstream DetermineEffectiveSecurityContext: runAsUser, runAsGroup, runAsNonRoot, seLinuxOptions
 * come from the pod; the container's own fields win).
 */
export function effectiveSecurityContext(pod: Pod, container: Container): SecurityContext {
  const podSc = pod.spec?.securityContext;
  const fromPod: SecurityContext = {};
  if (podSc?.runAsUser !== undefined) fromPod.runAsUser = podSc.runAsUser;
  if (podSc?.runAsGroup !== undefined) fromPod.runAsGroup = podSc.runAsGroup;
  if (podSc?.runAsNonRoot !== undefined) fromPod.runAsNonRoot = podSc.runAsNonRoot;
  if (podSc?.seLinuxOptions !== undefined) fromPod.seLinuxOptions = podSc.seLinuxOptions;
  const own = Object.fromEntries(
    Object.entries(container.securityContext ?? {}).filter(([, v]) => v !== undefined && v !== null),
  );
  return { ...fromPod, ...own };
}

/** The user an image runs as (CRI ImageStatus): a numeric uid, else a name; neither means root. */
export function imageUser(image: Image | undefined): { uid?: number; username?: string } {
  if (image?.uid) return { uid: Number(image.uid.value) };
  if (image?.username) return { username: image.username };
  return { uid: 0 };
}

/**
 * `runAsNonRoot` against the user the container will run as (upstream verifyRunAsNonRoot): the
 * error message when it breaks the policy, undefined when it holds.
 */
export function verifyRunAsNonRoot(
  pod: Pod,
  container: Container,
  user: { uid?: number; username?: string },
): string | undefined {
  const sc = effectiveSecurityContext(pod, container);
  if (!sc.runAsNonRoot) return undefined;
  const where = `(pod: ${JSON.stringify(formatPod(pod))}, container: ${container.name})`;
  if (sc.runAsUser !== undefined) {
    return sc.runAsUser === 0 ? `container's runAsUser breaks non-root policy ${where}` : undefined;
  }
  if (user.uid === 0) return `container has runAsNonRoot and image will run as root ${where}`;
  if (user.uid === undefined && user.username) {
    return `container has runAsNonRoot and image has non-numeric user (${user.username}), cannot verify user is non-root ${where}`;
  }
  return undefined;
}

/** Whether `runAsNonRoot` needs the image's user to be checked (no runAsUser says who runs). */
export function needsImageUser(pod: Pod, container: Container): boolean {
  const sc = effectiveSecurityContext(pod, container);
  return !!sc.runAsNonRoot && sc.runAsUser === undefined;
}

/** The seccomp profile: the container's, else the pod's, else RuntimeDefault or Unconfined. */
export function seccompProfile(pod: Pod, container: Container, options: SecurityOptions): SecurityProfile {
  const profile = container.securityContext?.seccompProfile ?? pod.spec?.securityContext?.seccompProfile;
  switch (profile?.type) {
    case 'RuntimeDefault':
      return { profileType: SecurityProfile_ProfileType.RuntimeDefault, localhostRef: '' };
    case 'Unconfined':
      return { profileType: SecurityProfile_ProfileType.Unconfined, localhostRef: '' };
    case 'Localhost':
      return {
        profileType: SecurityProfile_ProfileType.Localhost,
        localhostRef: join(options.seccompProfileRoot, profile.localhostProfile ?? ''),
      };
    default:
      return {
        profileType: options.seccompDefault
          ? SecurityProfile_ProfileType.RuntimeDefault
          : SecurityProfile_ProfileType.Unconfined,
        localhostRef: '',
      };
  }
}

/** The pod's extra groups for every process: fsGroup first, then supplementalGroups. */
function podGroups(pod: Pod): number[] {
  const sc = pod.spec?.securityContext;
  return [...(sc?.fsGroup !== undefined ? [sc.fsGroup] : []), ...(sc?.supplementalGroups ?? [])];
}

/**
 * The container's CRI security context (upstream determineEffectiveSecurityContext). Namespace
 * options are the sandbox's (the caller adds them); the user comes from `runAsUser`, else the
 * runtime takes the image's.
 */
export function containerSecurityContext(
  pod: Pod,
  container: Container,
  options: SecurityOptions,
): Partial<LinuxContainerSecurityContext> {
  const sc = effectiveSecurityContext(pod, container);
  const unmasked = sc.procMount === 'Unmasked';
  return {
    privileged: !!sc.privileged,
    readonlyRootfs: !!sc.readOnlyRootFilesystem,
    capabilities: {
      addCapabilities: [...(sc.capabilities?.add ?? [])],
      dropCapabilities: [...(sc.capabilities?.drop ?? [])],
      addAmbientCapabilities: [],
    },
    ...(sc.runAsUser !== undefined ? { runAsUser: { value: BigInt(sc.runAsUser) } } : {}),
    ...(sc.runAsGroup !== undefined ? { runAsGroup: { value: BigInt(sc.runAsGroup) } } : {}),
    ...(sc.seLinuxOptions ? { selinuxOptions: seLinux(sc.seLinuxOptions) } : {}),
    supplementalGroups: podGroups(pod).map(BigInt),
    // allowPrivilegeEscalation: false sets no_new_privs; unset leaves it off (upstream AddNoNewPrivileges).
    noNewPrivs: sc.allowPrivilegeEscalation === false,
    maskedPaths: unmasked ? [] : [...DEFAULT_MASKED_PATHS],
    readonlyPaths: unmasked ? [] : [...DEFAULT_READONLY_PATHS],
    seccomp: seccompProfile(pod, container, options),
  };
}

/** Whether any container of the pod (init, app, ephemeral) is privileged: the sandbox must be too. */
export function hasPrivilegedContainer(pod: Pod): boolean {
  const spec = pod.spec;
  return [
    ...(spec?.initContainers ?? []),
    ...(spec?.containers ?? []),
    ...(spec?.ephemeralContainers ?? []),
  ].some((c) => c.securityContext?.privileged === true);
}

/**
 * The sandbox's CRI security context and sysctls (upstream generatePodSandboxLinuxConfig): privileged
 * when a container is, seccomp RuntimeDefault for the pause process, the pod's user, group and groups.
 */
export function sandboxSecurityContext(pod: Pod): {
  securityContext: Partial<LinuxSandboxSecurityContext>;
  sysctls: Record<string, string>;
} {
  const sc = pod.spec?.securityContext;
  const sysctls = Object.fromEntries((sc?.sysctls ?? []).map((s) => [s.name, s.value]));
  return {
    securityContext: {
      privileged: hasPrivilegedContainer(pod),
      seccomp: { profileType: SecurityProfile_ProfileType.RuntimeDefault, localhostRef: '' },
      ...(sc?.runAsUser !== undefined ? { runAsUser: { value: BigInt(sc.runAsUser) } } : {}),
      ...(sc?.runAsGroup !== undefined ? { runAsGroup: { value: BigInt(sc.runAsGroup) } } : {}),
      ...(sc?.seLinuxOptions ? { selinuxOptions: seLinux(sc.seLinuxOptions) } : {}),
      supplementalGroups: podGroups(pod).map(BigInt),
    },
    sysctls,
  };
}

function seLinux(o: NonNullable<SecurityContext['seLinuxOptions']>) {
  return { user: o.user ?? '', role: o.role ?? '', type: o.type ?? '', level: o.level ?? '' };
}
