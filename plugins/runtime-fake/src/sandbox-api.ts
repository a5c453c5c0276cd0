/** The fake runtime's CRI Version, Status, UpdateRuntimeConfig and pod sandbox calls. */
import { errorMessage, invalidInput, NodeletError } from '@nodelet/kernel';
import {
  type ListPodSandboxRequest,
  type ListPodSandboxResponse,
  NamespaceMode,
  PodSandboxConfig,
  PodSandboxState,
  type PodSandboxStatusRequest,
  type PodSandboxStatusResponse,
  type RemovePodSandboxRequest,
  type RemovePodSandboxResponse,
  type RunPodSandboxRequest,
  type RunPodSandboxResponse,
  type StatusRequest,
  type StatusResponse,
  type StopPodSandboxRequest,
  type StopPodSandboxResponse,
  type UpdateRuntimeConfigRequest,
  type UpdateRuntimeConfigResponse,
  type VersionRequest,
  type VersionResponse,
} from '@nodelet/cri';
import { behaviorsFromAnnotations } from './behavior.js';
import { IpAllocator } from './ip-allocator.js';
import { type SandboxRecord, toPodSandbox, toPodSandboxStatus } from './records.js';
import { POD_UID_LABEL } from './runtime-store.js';
import { FakeRuntimeCore, RUNTIME_NAME, RUNTIME_VERSION } from './runtime-core.js';

export abstract class SandboxApi extends FakeRuntimeCore {
  async version(_req?: VersionRequest): Promise<VersionResponse> {
    this.check();
    return {
      version: '0.1.0',
      runtimeName: RUNTIME_NAME,
      runtimeVersion: RUNTIME_VERSION,
      runtimeApiVersion: 'v1',
    };
  }

  async status(_req?: StatusRequest): Promise<StatusResponse> {
    this.check();
    return {
      status: { conditions: [...this.conditions.values()].map((c) => ({ ...c })) },
      info: {},
      runtimeHandlers: [{ name: '', features: { recursiveReadOnlyMounts: false, userNamespaces: false } }],
      features: { supplementalGroupsPolicy: false, userNamespacesHostNetwork: false, mountOptions: false },
    };
  }

  /** The kubelet passes the node's pod CIDR here; sandboxes created afterwards get IPs from it. */
  async updateRuntimeConfig(req: UpdateRuntimeConfigRequest): Promise<UpdateRuntimeConfigResponse> {
    this.check();
    const cidrs = req.runtimeConfig?.networkConfig?.podCidr ?? '';
    // Dual-stack lists ("v4,v6"): the fake hands out the IPv4 range only.
    const v4 = cidrs
      .split(',')
      .map((c) => c.trim())
      .find((c) => c.includes('.'));
    if (v4 && v4 !== this.ipPool.cidr) {
      const pool = new IpAllocator(v4);
      if (pool.cidr !== this.ipPool.cidr) this.ipPool = pool;
    }
    return {};
  }

  async runPodSandbox(req: RunPodSandboxRequest): Promise<RunPodSandboxResponse> {
    this.check();
    const config = PodSandboxConfig.fromPartial(req.config ?? {});
    const metadata = config.metadata;
    if (!metadata || metadata.name === '')
      throw invalidInput('sandbox config must include metadata with a name');
    const behaviors = behaviorsFromAnnotations(config.annotations);
    const reservedName = `${metadata.name}_${metadata.namespace}_${metadata.uid}_${metadata.attempt}`;
    const holder = this.store.sandboxNameHolder(reservedName);
    if (holder !== undefined) {
      throw new NodeletError(
        'AlreadyExists',
        `failed to reserve sandbox name "${reservedName}": name "${reservedName}" is reserved for "${holder}"`,
      );
    }
    const hostNetwork = config.linux?.securityContext?.namespaceOptions?.network === NamespaceMode.NODE;
    if (hostNetwork && config.hostname !== '') {
      // containerd gives a host-network sandbox the node's UTS namespace, where runc cannot set a
      // hostname: the kubelet leaves it empty for such pods.
      throw new NodeletError(
        'Internal',
        'failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to set hostname without a private UTS namespace: unknown',
      );
    }
    const id = this.newId();
    let ip = '';
    let ipPool: IpAllocator | undefined;
    if (!hostNetwork) {
      const network = this.conditions.get('NetworkReady');
      if (network && !network.status) {
        throw new NodeletError(
          'Internal',
          `failed to setup network for sandbox "${id}": ${network.message || 'cni plugin not initialized'}`,
        );
      }
      try {
        ip = this.ipPool.allocate();
      } catch (err) {
        throw new NodeletError(
          'Internal',
          `failed to setup network for sandbox "${id}": ${errorMessage(err)}`,
        );
      }
      ipPool = this.ipPool;
    }
    const podUid = config.labels[POD_UID_LABEL];
    const sandbox: SandboxRecord = {
      id,
      reservedName,
      config,
      metadata,
      runtimeHandler: req.runtimeHandler ?? '',
      createdAt: this.creationStamp(),
      podUid,
      ip,
      ipPool,
      behaviors,
      containers: new Set(),
      state: PodSandboxState.SANDBOX_READY,
    };
    this.store.addSandbox(sandbox);
    this.logger?.debug('sandbox ready', { id, pod: `${metadata.namespace}/${metadata.name}`, ip });
    return { podSandboxId: id };
  }

  /**
   * Kills the sandbox's containers at once (timeout 0, as runtimes do), tears its network down (the
   * IP goes back to the pool and PodSandboxStatus reports none, as containerd) and marks it NOTREADY.
   * An unknown id succeeds: the call is idempotent by the CRI contract ("must not return an error if
   * all relevant resources have already been reclaimed"), as in CRI-O and containerd 1.7+.
   */
  async stopPodSandbox(req: StopPodSandboxRequest): Promise<StopPodSandboxResponse> {
    this.check();
    const sandbox = this.store.sandbox(req.podSandboxId);
    if (!sandbox) return {};
    for (const c of sandbox.containers) this.lifecycle.kill(c, 'its sandbox was stopped');
    sandbox.state = PodSandboxState.SANDBOX_NOTREADY;
    this.releaseIp(sandbox);
    return {};
  }

  /** Removes the sandbox, its containers (killed first) and its IP. Unknown ids succeed. */
  async removePodSandbox(req: RemovePodSandboxRequest): Promise<RemovePodSandboxResponse> {
    this.check();
    const sandbox = this.store.sandbox(req.podSandboxId);
    if (!sandbox) return {};
    for (const c of [...sandbox.containers]) this.forgetContainer(c, 'its sandbox was removed');
    sandbox.state = PodSandboxState.SANDBOX_NOTREADY;
    this.releaseIp(sandbox);
    this.store.deleteSandbox(sandbox);
    return {};
  }

  async podSandboxStatus(req: PodSandboxStatusRequest): Promise<PodSandboxStatusResponse> {
    this.check();
    const sandbox = this.mustSandbox(req.podSandboxId);
    return { status: toPodSandboxStatus(sandbox), info: {}, containersStatuses: [], timestamp: this.nowNs() };
  }

  async listPodSandbox(req: ListPodSandboxRequest): Promise<ListPodSandboxResponse> {
    this.check();
    const items = [];
    for (const s of this.store.findSandboxes(req.filter)) items.push(toPodSandbox(s));
    return { items };
  }
}
