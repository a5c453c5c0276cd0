import { mkdir } from 'node:fs/promises';
import type { Pod } from '@nodelet/api';
import {
  CriLabels,
  NamespaceMode,
  nanosToMs,
  PodSandboxConfig,
  podLogsDirectory,
  PodSandboxState,
  Protocol,
  type RuntimeService,
} from '@nodelet/cri';
import type { Clock } from '@nodelet/kernel';
import type { PodNetwork } from '../network/index.js';
import type { RuntimeCache } from '../runtime-cache.js';
import type { RuntimeSandbox } from '../runtime-pod.js';
import { sandboxSecurityContext } from './security-context.js';

/**
 * A nodelet label on every sandbox and container: the node that made it. Housekeeping removes only
 * its own node's orphans, so several kubelets (simulated nodes, tests) can share one runtime without
 * removing each other's pods — or sandboxes some other CRI client made.
 */
export const NODE_NAME_LABEL = 'nodelet.dev/node';

export interface SandboxOptions {
  nodeName: string;
  podLogsDir: string;
  clock: Clock;
  cache: RuntimeCache;
  /** The pod's cgroup, the sandbox's cgroup parent (cgroupsPerQOS); absent: the runtime's default. */
  cgroupParent?: (pod: Pod) => string;
  /** The pod's hostname and DNS config (network/). */
  network: PodNetwork;
}

interface SandboxNetwork {
  ip: string;
  additionalIps: string[];
}

/**
 * Pod sandboxes (upstream kuberuntime_sandbox.go): the sandbox config of a pod, creating one, reading
 * its status and network.
 */
export class PodSandboxes {
  /**
   * Pod IPs of ready sandboxes by sandbox id: a sandbox's network does not change in its life, so each
   * sync need not ask PodSandboxStatus again (a third of the CRI calls of starting a pod). Dropped when
   * the sandbox is seen not ready or the pod is removed.
   */
  private readonly ips = new Map<string, SandboxNetwork>();

  constructor(
    private readonly runtime: RuntimeService,
    private readonly options: SandboxOptions,
  ) {}

  /**
   * Creates the pod's sandbox (and its log directory); returns its id. The hostname and DNS config are
   * worked out here, strictly: what upstream refuses (an FQDN too long, an unreadable resolv.conf) fails
   * the creation with its message.
   */
  async create(pod: Pod, config: PodSandboxConfig): Promise<string> {
    const { network, clock } = this.options;
    config.hostname = network.sandboxHostname(pod);
    config.dnsConfig = await clock.track(network.dnsConfig(pod));
    await this.options.clock.track(mkdir(config.logDirectory, { recursive: true }));
    const { podSandboxId } = await this.options.cache.creating(pod.metadata!.uid!, () =>
      this.runtime.runPodSandbox({ config, runtimeHandler: pod.spec?.runtimeClassName ?? '' }),
    );
    return podSandboxId;
  }

  /** A new sandbox as PodSandboxStatus reports it; its IPs are kept while it is ready. */
  async read(podSandboxId: string, attempt: number): Promise<RuntimeSandbox> {
    const { status: s } = await this.runtime.podSandboxStatus({ podSandboxId, verbose: false });
    const ready = s?.state === PodSandboxState.SANDBOX_READY;
    const network = {
      ip: s?.network?.ip ?? '',
      additionalIps: s?.network?.additionalIps.map((p) => p.ip) ?? [],
    };
    if (ready && network.ip) this.ips.set(podSandboxId, network);
    return {
      id: podSandboxId,
      ready,
      attempt: s?.metadata?.attempt ?? attempt,
      createdAt: nanosToMs(s?.createdAt ?? 0n),
      ...network,
    };
  }

  /** A listed sandbox as the pod's runtime status has it: the network of a ready one is read once. */
  async listed(sb: {
    id: string;
    state: PodSandboxState;
    createdAt: bigint;
    metadata?: { attempt: number };
  }): Promise<RuntimeSandbox> {
    const ready = sb.state === PodSandboxState.SANDBOX_READY;
    let network: SandboxNetwork = { ip: '', additionalIps: [] };
    if (ready) network = await this.network(sb.id);
    else this.ips.delete(sb.id);
    return {
      id: sb.id,
      ready,
      attempt: sb.metadata?.attempt ?? 0,
      createdAt: nanosToMs(sb.createdAt),
      ...network,
    };
  }

  /** A ready sandbox's IPs: from PodSandboxStatus once, then from memory. */
  private async network(podSandboxId: string): Promise<SandboxNetwork> {
    let network = this.ips.get(podSandboxId);
    if (!network) {
      const s = await this.runtime.podSandboxStatus({ podSandboxId, verbose: false });
      network = {
        ip: s.status?.network?.ip ?? '',
        additionalIps: s.status?.network?.additionalIps.map((p) => p.ip) ?? [],
      };
      // A sandbox without an IP yet (host network, or a runtime still setting it up) is asked again.
      if (network.ip) this.ips.set(podSandboxId, network);
    }
    return network;
  }

  async remove(podSandboxId: string): Promise<void> {
    await this.runtime.removePodSandbox({ podSandboxId });
    this.ips.delete(podSandboxId);
  }

  config(pod: Pod, attempt: number): PodSandboxConfig {
    const meta = pod.metadata!;
    const namespace = meta.namespace ?? 'default';
    const ports = pod.spec!.containers.flatMap((c) => c.ports ?? []).filter((p) => p.hostPort);
    const security = sandboxSecurityContext(pod);
    return PodSandboxConfig.fromPartial({
      metadata: { name: meta.name!, namespace, uid: meta.uid!, attempt },
      // A host-network pod has the node's hostname (upstream sets none; runc refuses one without a UTS
      // namespace of the pod's own). Names too long for the kernel are cut (network/hostname.ts).
      hostname: this.options.network.lenientSandboxHostname(pod),
      logDirectory: podLogsDirectory(this.options.podLogsDir, namespace, meta.name!, meta.uid!),
      portMappings: ports.map((p) => ({
        protocol: p.protocol === 'UDP' ? Protocol.UDP : p.protocol === 'SCTP' ? Protocol.SCTP : Protocol.TCP,
        containerPort: p.containerPort,
        hostPort: p.hostPort ?? 0,
        hostIp: p.hostIP ?? '',
      })),
      labels: {
        ...(meta.labels ?? {}),
        [CriLabels.PodName]: meta.name!,
        [CriLabels.PodNamespace]: namespace,
        [CriLabels.PodUID]: meta.uid!,
        [NODE_NAME_LABEL]: this.options.nodeName,
      },
      annotations: { ...(meta.annotations ?? {}) },
      linux: {
        cgroupParent: this.options.cgroupParent?.(pod) ?? '',
        sysctls: security.sysctls,
        securityContext: {
          ...security.securityContext,
          namespaceOptions: {
            network: pod.spec?.hostNetwork ? NamespaceMode.NODE : NamespaceMode.POD,
            pid: pod.spec?.hostPID
              ? NamespaceMode.NODE
              : pod.spec?.shareProcessNamespace
                ? NamespaceMode.POD
                : NamespaceMode.CONTAINER,
            ipc: pod.spec?.hostIPC ? NamespaceMode.NODE : NamespaceMode.POD,
          },
        },
      },
    });
  }
}
