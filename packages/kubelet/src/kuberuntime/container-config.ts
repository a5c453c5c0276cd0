import type { Container, Pod } from '@nodelet/api';
import {
  ContainerConfig,
  containerLogPath,
  CriAnnotations,
  CriLabels,
  type NamespaceOption,
  NamespaceMode,
} from '@nodelet/cri';
import { hashContainer } from '../container-hash.js';
import { expandCommand, makeEnvironmentVariables } from '../env.js';
import type { ImagePuller } from '../image-puller.js';
import { hostsMount } from '../network/index.js';
import { StandalonePodObjects } from '../objects/standalone.js';
import { containerResources, criLinuxResources } from '../resources.js';
import type { ContainerOptions, StartTarget } from './container.js';
import { containerMounts } from './mounts.js';
import { NODE_NAME_LABEL } from './sandbox.js';
import {
  containerSecurityContext,
  imageUser,
  needsImageUser,
  type SecurityOptions,
  verifyRunAsNonRoot,
} from './security-context.js';
import { terminationMessageMount } from './termination-message.js';

/** What building a container's config needs of the kubelet. */
export interface ConfigDeps {
  options: ContainerOptions;
  images: Pick<ImagePuller, 'status'>;
  /** A Warning event on the pod about the container (invalid envFrom keys). */
  warn(pod: Pod, container: Container, reason: string, message: string): void;
}

export type ConfigTarget = Pick<
  StartTarget,
  'podIP' | 'hostIP' | 'volumePaths' | 'readOnlyVolumes' | 'sandboxConfig' | 'pidTarget' | 'hostsFile'
>;

/**
 * The sandbox's namespaces; a container with a target (`kubectl debug --target`) joins that
 * container's process namespace instead of having its own (upstream NamespaceMode TARGET).
 */
function namespaces(target: ConfigTarget): NamespaceOption | undefined {
  const own = target.sandboxConfig?.linux?.securityContext?.namespaceOptions;
  if (!own || !target.pidTarget || own.pid !== NamespaceMode.CONTAINER) return own;
  return { ...own, pid: NamespaceMode.TARGET, targetId: target.pidTarget };
}

/**
 * A container's CRI config (upstream generateContainerConfig): environment, mounts, resources, the
 * security context (runAsNonRoot checked against the image's user), labels and annotations the kubelet
 * reads back, the log path. Throws what makes it CreateContainerConfigError.
 */
export async function containerConfig(
  deps: ConfigDeps,
  pod: Pod,
  container: Container,
  image: string,
  restartCount: number,
  target: ConfigTarget,
): Promise<ContainerConfig> {
  const meta = pod.metadata!;
  const { options } = deps;
  const env = await makeEnvironmentVariables(pod, container, {
    objects: options.objects ?? standalone,
    services: options.services,
    facts: {
      nodeName: options.nodeName,
      hostIPs: target.hostIP ? [target.hostIP] : [],
      podIPs: target.podIP ? [target.podIP] : [],
      allocatable: options.allocatable?.() ?? {},
    },
    warn: (reason, message) => deps.warn(pod, container, reason, message),
  });
  const security = options.security ?? defaultSecurity;
  // runAsNonRoot without a runAsUser: the image's user decides (asked only then: one CRI call).
  const user = needsImageUser(pod, container) ? imageUser(await deps.images.status(image)) : {};
  const refused = verifyRunAsNonRoot(pod, container, user);
  if (refused) throw new Error(refused);
  const mounts = await options.clock.track(
    containerMounts(container, target.volumePaths, env, target.readOnlyVolumes),
  );
  const hosts = hostsMount(container, await target.hostsFile?.());
  if (hosts) mounts.push(hosts);
  const message = options.rootDir
    ? await options.clock.track(terminationMessageMount(options.rootDir, meta.uid!, container))
    : undefined;
  if (message) mounts.push(message);
  const res = containerResources(pod, container, options.memoryCapacityBytes);
  return ContainerConfig.fromPartial({
    metadata: { name: container.name, attempt: restartCount },
    image: { image, userSpecifiedImage: container.image ?? '' },
    command: expandCommand(container.command, env),
    args: expandCommand(container.args, env),
    workingDir: container.workingDir ?? '',
    envs: env.map(([key, value]) => ({ key, value })),
    mounts,
    labels: {
      [CriLabels.PodName]: meta.name!,
      [CriLabels.PodNamespace]: meta.namespace ?? 'default',
      [CriLabels.PodUID]: meta.uid!,
      [CriLabels.ContainerName]: container.name,
      [NODE_NAME_LABEL]: options.nodeName,
    },
    annotations: {
      [CriAnnotations.ContainerHash]: hashContainer(container),
      [CriAnnotations.ContainerRestartCount]: String(restartCount),
      [CriAnnotations.ContainerTerminationMessagePath]:
        container.terminationMessagePath ?? '/dev/termination-log',
      [CriAnnotations.ContainerTerminationMessagePolicy]: container.terminationMessagePolicy ?? 'File',
      [CriAnnotations.PodTerminationGracePeriod]: String(pod.spec?.terminationGracePeriodSeconds ?? 30),
      ...(container.ports?.length
        ? { [CriAnnotations.ContainerPorts]: JSON.stringify(container.ports) }
        : {}),
    },
    logPath: containerLogPath(container.name, restartCount),
    stdin: !!container.stdin,
    stdinOnce: !!container.stdinOnce,
    tty: !!container.tty,
    linux: {
      resources: criLinuxResources(res),
      securityContext: {
        ...containerSecurityContext(pod, container, security),
        namespaceOptions: namespaces(target),
      },
    },
  });
}

const standalone = new StandalonePodObjects();
const defaultSecurity: SecurityOptions = {
  seccompProfileRoot: '/var/lib/kubelet/seccomp',
  seccompDefault: false,
};
