import { readFileSync, statfsSync } from 'node:fs';
import { arch, cpus, release, totalmem } from 'node:os';
import { type Node, type NodeCondition, type NodeStatus, rfc3339Seconds, type Taint } from '@nodelet/client';
import { nodeAllocatable, type ReservationConfig } from '../cm/node-allocatable.js';

/**
 * The Node object this kubelet registers and keeps current (upstream kubelet_node_status.go and the
 * nodestatus setters), as pure functions of what the kubelet knows: `initialNode` for registration,
 * `nodeStatus` for every update, `nodeStatusChanged` to decide whether an update is worth a write.
 */

/** Upstream well-known labels the kubelet sets on its Node. */
export const LabelHostname = 'kubernetes.io/hostname';
export const LabelOS = 'kubernetes.io/os';
export const LabelArch = 'kubernetes.io/arch';
export const LegacyLabelOS = 'beta.kubernetes.io/os';
export const LegacyLabelArch = 'beta.kubernetes.io/arch';

export const kubeletVersion = 'v1.34.0-nodelet.0.1.0';

export interface NodeIdentity {
  nodeName: string;
  /** The host name (`kubernetes.io/hostname` and the Hostname address). */
  hostname: string;
  nodeIP: string;
  /** `--node-labels`. */
  labels?: Record<string, string>;
  /** `--register-with-taints`. */
  taints?: Taint[];
  /** Resources the node has (`cpu`, `memory`, `pods`, `ephemeral-storage`, …). */
  capacity: Record<string, string>;
  /** What pods may use; by default capacity less the hard eviction thresholds. */
  allocatable: Record<string, string>;
  /** Port of the kubelet's endpoint (`daemonEndpoints.kubeletEndpoint.Port`). */
  kubeletPort?: number;
}

export interface SystemInfo {
  machineID: string;
  systemUUID: string;
  bootID: string;
  kernelVersion: string;
  osImage: string;
  containerRuntimeVersion: string;
  kubeletVersion: string;
  operatingSystem: string;
  architecture: string;
}

/** What node conditions are computed from. */
export interface NodeHealth {
  /** CRI Status: the RuntimeReady and NetworkReady conditions; undefined when the runtime did not answer. */
  runtime?: { type: string; status: boolean; reason: string; message: string }[];
  runtimeError?: string;
  /** PLEG (`kubelet.healthz()`). */
  pleg: { healthy: boolean; message: string };
  /** Pressure conditions reported on the bus (eviction manager), by type: True when under pressure. */
  pressure?: Partial<
    Record<'MemoryPressure' | 'DiskPressure' | 'PIDPressure', { status: boolean; message?: string }>
  >;
}

export const goArch = (a: string = arch()): string =>
  a === 'x64' ? 'amd64' : a === 'ia32' ? '386' : a === 'ppc64' ? 'ppc64le' : a;

/**
 * Capacity of this host: CPUs, memory, `maxPods` pods, and the root directory's file system as
 * `ephemeral-storage`. Allocatable is capacity less `systemReserved`, `kubeReserved` and the hard
 * eviction thresholds (cm/node-allocatable.ts).
 */
export function hostResources(
  options: { maxPods?: number; rootDir?: string; reservation?: ReservationConfig } = {},
): {
  capacity: Record<string, string>;
  allocatable: Record<string, string>;
} {
  const capacity: Record<string, string> = {
    cpu: String(cpus().length),
    memory: `${Math.floor(totalmem() / 1024)}Ki`,
    pods: String(options.maxPods ?? 110),
  };
  const fs = options.rootDir ? statfsOrUndefined(options.rootDir) : undefined;
  if (fs) capacity['ephemeral-storage'] = `${Math.floor((fs.blocks * fs.bsize) / 1024)}Ki`;
  return { capacity, allocatable: allocatableOf(capacity, options.reservation) };
}

/** Allocatable of a capacity (this host's, or a simulated node's as configured). */
export function allocatableOf(
  capacity: Record<string, string>,
  reservation: ReservationConfig = {},
): Record<string, string> {
  return nodeAllocatable(capacity, reservation);
}

function statfsOrUndefined(path: string): { blocks: number; bsize: number } | undefined {
  for (let p = path; ; p = p.slice(0, Math.max(1, p.lastIndexOf('/')))) {
    try {
      const s = statfsSync(p);
      return { blocks: Number(s.blocks), bsize: Number(s.bsize) };
    } catch {
      if (p === '/') return undefined;
    }
  }
}

const readTrimmed = (path: string): string => {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return '';
  }
};

/** machine-id, boot id, kernel and OS image of this host (empty where unreadable, as for non-root). */
export function hostSystemInfo(containerRuntimeVersion: string): SystemInfo {
  const osRelease = readTrimmed('/etc/os-release');
  const pretty = /^PRETTY_NAME="?([^"\n]*)"?$/m.exec(osRelease)?.[1] ?? 'Linux';
  return {
    machineID: readTrimmed('/etc/machine-id'),
    systemUUID: readTrimmed('/sys/class/dmi/id/product_uuid'),
    bootID: readTrimmed('/proc/sys/kernel/random/boot_id'),
    kernelVersion: release(),
    osImage: pretty,
    containerRuntimeVersion,
    kubeletVersion,
    operatingSystem: process.platform,
    architecture: goArch(),
  };
}

/** The Node the kubelet creates on registration (upstream initialNode). */
export function initialNode(
  identity: NodeIdentity,
  system: SystemInfo,
  health: NodeHealth,
  now: number,
): Node {
  const labels: Record<string, string> = {
    [LabelHostname]: identity.hostname,
    [LabelOS]: system.operatingSystem,
    [LabelArch]: system.architecture,
    [LegacyLabelOS]: system.operatingSystem,
    [LegacyLabelArch]: system.architecture,
    ...identity.labels,
  };
  const node: Node = {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: identity.nodeName,
      labels,
      annotations: { 'volumes.kubernetes.io/controller-managed-attach-detach': 'true' },
    },
    spec: {},
    status: nodeStatus(identity, system, health, undefined, now),
  };
  if (identity.taints && identity.taints.length > 0)
    node.spec!.taints = identity.taints.map((t) => ({ ...t }));
  return node;
}

/** The default labels an existing Node is reconciled to on registration (upstream updateDefaultLabels). */
export function reconcileLabels(existing: Node, initial: Node): Record<string, string> | undefined {
  const wanted = initial.metadata?.labels ?? {};
  const have = existing.metadata?.labels ?? {};
  const patch: Record<string, string> = {};
  for (const key of [LabelHostname, LabelOS, LabelArch, LegacyLabelOS, LegacyLabelArch]) {
    if (wanted[key] !== undefined && have[key] !== wanted[key]) patch[key] = wanted[key]!;
  }
  return Object.keys(patch).length > 0 ? patch : undefined;
}

/**
 * The node's status now: addresses, capacity, allocatable, nodeInfo, daemon endpoints and the four
 * conditions. Transition times are kept from `previous` while a condition's status stays; heartbeat times
 * are `now`.
 */
export function nodeStatus(
  identity: NodeIdentity,
  system: SystemInfo,
  health: NodeHealth,
  previous: NodeStatus | undefined,
  now: number,
): NodeStatus {
  const addresses = [
    ...(identity.nodeIP ? [{ type: 'InternalIP', address: identity.nodeIP }] : []),
    { type: 'Hostname', address: identity.hostname },
  ];
  return {
    capacity: { ...identity.capacity },
    allocatable: { ...identity.allocatable },
    conditions: nodeConditions(health, previous?.conditions, now),
    addresses,
    daemonEndpoints: { kubeletEndpoint: { Port: identity.kubeletPort ?? 10250 } },
    nodeInfo: { ...system, kubeProxyVersion: '' },
  };
}

const pressure = {
  MemoryPressure: {
    ok: ['KubeletHasSufficientMemory', 'kubelet has sufficient memory available'],
    bad: ['KubeletHasInsufficientMemory', 'kubelet has insufficient memory available'],
  },
  DiskPressure: {
    ok: ['KubeletHasNoDiskPressure', 'kubelet has no disk pressure'],
    bad: ['KubeletHasDiskPressure', 'kubelet has disk pressure'],
  },
  PIDPressure: {
    ok: ['KubeletHasSufficientPID', 'kubelet has sufficient PID available'],
    bad: ['KubeletHasInsufficientPID', 'kubelet has insufficient PID available'],
  },
} as const;

/**
 * MemoryPressure, DiskPressure, PIDPressure and Ready, with upstream's reasons and messages. Ready is
 * False (`KubeletNotReady`) with every error found: the runtime did not answer ("container runtime is
 * down"), RuntimeReady false, PLEG unhealthy ("PLEG is not healthy: …"), NetworkReady false ("container
 * runtime network not ready: …").
 */
export function nodeConditions(
  health: NodeHealth,
  previous: readonly NodeCondition[] | undefined,
  now: number,
): NodeCondition[] {
  const stamp = rfc3339Seconds(now);
  const make = (type: string, status: 'True' | 'False', reason: string, message: string): NodeCondition => {
    const before = previous?.find((c) => c.type === type);
    return {
      type,
      status,
      lastHeartbeatTime: stamp,
      lastTransitionTime: before && before.status === status ? before.lastTransitionTime : stamp,
      reason,
      message,
    };
  };
  const out: NodeCondition[] = [];
  for (const type of ['MemoryPressure', 'DiskPressure', 'PIDPressure'] as const) {
    const p = health.pressure?.[type];
    const [reason, message] = p?.status ? pressure[type].bad : pressure[type].ok;
    out.push(make(type, p?.status ? 'True' : 'False', reason, p?.message || message));
  }
  const errors = readyErrors(health);
  out.push(
    errors.length === 0
      ? make('Ready', 'True', 'KubeletReady', 'kubelet is posting ready status')
      : make(
          'Ready',
          'False',
          'KubeletNotReady',
          errors.length === 1 ? errors[0]! : `[${errors.join(', ')}]`,
        ),
  );
  return out;
}

function readyErrors(health: NodeHealth): string[] {
  const errors: string[] = [];
  if (!health.runtime) {
    errors.push(
      health.runtimeError ? `container runtime is down: ${health.runtimeError}` : 'container runtime is down',
    );
  } else {
    const runtimeReady = health.runtime.find((c) => c.type === 'RuntimeReady');
    if (!runtimeReady?.status) {
      errors.push(
        `container runtime not ready: RuntimeReady=false reason:${runtimeReady?.reason ?? ''} message:${runtimeReady?.message ?? ''}`,
      );
    }
  }
  if (!health.pleg.healthy) errors.push(`PLEG is not healthy: ${health.pleg.message}`);
  if (health.runtime) {
    const network = health.runtime.find((c) => c.type === 'NetworkReady');
    if (!network?.status) {
      errors.push(
        `container runtime network not ready: NetworkReady=false reason:${network?.reason ?? ''} message:${network?.message ?? ''}`,
      );
    }
  }
  return errors;
}

/** Whether a status differs from the last reported one in anything but heartbeat times. */
export function nodeStatusChanged(before: NodeStatus | undefined, after: NodeStatus): boolean {
  if (!before) return true;
  const strip = (s: NodeStatus) =>
    JSON.stringify({
      ...s,
      conditions: [...(s.conditions ?? [])]
        .map((c) => ({ ...c, lastHeartbeatTime: undefined }))
        .sort((a, b) => a.type.localeCompare(b.type)),
      nodeInfo: s.nodeInfo,
      addresses: s.addresses,
    });
  return strip(before) !== strip(after);
}

/**
 * `--register-with-taints`: `key[=value]:Effect`, comma separated (upstream's taint syntax). Throws a
 * message naming the bad entry.
 */
export function parseTaints(spec: string): Taint[] {
  const taints: Taint[] = [];
  for (const raw of spec.split(',')) {
    const item = raw.trim();
    if (!item) continue;
    const colon = item.lastIndexOf(':');
    if (colon <= 0) throw new Error(`invalid taint ${JSON.stringify(item)}: want key[=value]:effect`);
    const effect = item.slice(colon + 1);
    if (!['NoSchedule', 'PreferNoSchedule', 'NoExecute'].includes(effect)) {
      throw new Error(
        `invalid taint ${JSON.stringify(item)}: effect must be NoSchedule, PreferNoSchedule or NoExecute`,
      );
    }
    const kv = item.slice(0, colon);
    const eq = kv.indexOf('=');
    const key = eq >= 0 ? kv.slice(0, eq) : kv;
    if (!key) throw new Error(`invalid taint ${JSON.stringify(item)}: the key is empty`);
    taints.push({ key, ...(eq >= 0 ? { value: kv.slice(eq + 1) } : {}), effect });
  }
  return taints;
}

/** `--node-labels`: `key=value`, comma separated. */
export function parseLabels(spec: string): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const raw of spec.split(',')) {
    const item = raw.trim();
    if (!item) continue;
    const eq = item.indexOf('=');
    if (eq <= 0) throw new Error(`invalid label ${JSON.stringify(item)}: want key=value`);
    labels[item.slice(0, eq)] = item.slice(eq + 1);
  }
  return labels;
}
