/**
 * Builders for the package's own tests: CRI requests shaped like the kubelet's (labels, log paths),
 * with only the fields a test cares about.
 */
import type { ExecutionContext } from 'ava';
import { type ErrorCode, NodeletError, VirtualClock } from '@nodelet/kernel';
import { ContainerConfig, NamespaceMode, PodSandboxConfig } from '@nodelet/cri';
import type { FakeRuntimeConfig } from './config.js';
import { FakeRuntime } from './fake-runtime.js';

/**
 * A runtime on a virtual clock. Logs stay in memory unless the test asks for files (the default
 * sandbox log directory is /var/log/pods, which a test must not write to).
 */
export function setup(config?: FakeRuntimeConfig): { clock: VirtualClock; runtime: FakeRuntime } {
  const clock = new VirtualClock();
  return { clock, runtime: new FakeRuntime({ clock, config: { writeLogs: false, ...config } }) };
}

export interface PodOptions {
  namespace?: string;
  uid?: string;
  attempt?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  logDirectory?: string;
  hostNetwork?: boolean;
}

export function sandboxConfig(name: string, o: PodOptions = {}): PodSandboxConfig {
  const namespace = o.namespace ?? 'default';
  const uid = o.uid ?? `uid-${name}`;
  return PodSandboxConfig.fromPartial({
    metadata: { name, namespace, uid, attempt: o.attempt ?? 0 },
    hostname: o.hostNetwork ? '' : name,
    logDirectory: o.logDirectory ?? `/var/log/pods/${namespace}_${name}_${uid}`,
    labels: {
      'io.kubernetes.pod.name': name,
      'io.kubernetes.pod.namespace': namespace,
      'io.kubernetes.pod.uid': uid,
      ...o.labels,
    },
    annotations: o.annotations ?? {},
    linux: o.hostNetwork ? { securityContext: { namespaceOptions: { network: NamespaceMode.NODE } } } : {},
  });
}

export async function runPod(runtime: FakeRuntime, name: string, o: PodOptions = {}): Promise<string> {
  const { podSandboxId } = await runtime.runPodSandbox({
    config: sandboxConfig(name, o),
    runtimeHandler: '',
  });
  return podSandboxId;
}

export interface ContainerOptions {
  image?: string;
  attempt?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  command?: string[];
  args?: string[];
  envs?: Record<string, string>;
  mounts?: Array<{ containerPath: string; hostPath: string; readonly?: boolean }>;
}

export async function createContainer(
  runtime: FakeRuntime,
  podSandboxId: string,
  name: string,
  o: ContainerOptions = {},
): Promise<string> {
  const sandbox = runtime.sandboxConfig(podSandboxId);
  const attempt = o.attempt ?? 0;
  const config = ContainerConfig.fromPartial({
    metadata: { name, attempt },
    image: { image: o.image ?? 'busybox', userSpecifiedImage: o.image ?? 'busybox' },
    command: o.command ?? ['sleep', 'infinity'],
    args: o.args ?? [],
    envs: Object.entries(o.envs ?? {}).map(([key, value]) => ({ key, value })),
    mounts: o.mounts ?? [],
    labels: {
      'io.kubernetes.pod.name': sandbox.metadata!.name,
      'io.kubernetes.pod.namespace': sandbox.metadata!.namespace,
      'io.kubernetes.pod.uid': sandbox.metadata!.uid,
      'io.kubernetes.container.name': name,
      ...o.labels,
    },
    annotations: { 'io.kubernetes.container.restartCount': String(attempt), ...o.annotations },
    logPath: `${name}/${attempt}.log`,
  });
  const { containerId } = await runtime.createContainer({ podSandboxId, config, sandboxConfig: sandbox });
  return containerId;
}

/** Creates and starts a container; resolves once StartContainer did. */
export async function startContainer(
  runtime: FakeRuntime,
  podSandboxId: string,
  name: string,
  o: ContainerOptions = {},
): Promise<string> {
  const id = await createContainer(runtime, podSandboxId, name, o);
  await runtime.startContainer({ containerId: id });
  return id;
}

/** Tracks whether a promise settled, for "still pending at deadline − 1 ms" checks. */
export function track<T>(promise: Promise<T>): { readonly settled: boolean; readonly promise: Promise<T> } {
  const state = { settled: false, promise };
  promise.then(
    () => (state.settled = true),
    () => (state.settled = true),
  );
  return state;
}

/** Nanoseconds of the virtual clock's epoch plus `ms`, as CRI time stamps show them. */
const EPOCH_NS = BigInt(Date.UTC(2026, 0, 1)) * 1_000_000n;
export const ns = (ms: number) => EPOCH_NS + BigInt(ms) * 1_000_000n;

/** The behaviour annotation of one container. */
export const behave = (container: string, value: string) => ({
  [`runtime-fake.nodelet.dev/${container}`]: value,
});

/** Asserts that `err` is a NodeletError of `expected` code. */
export function expectCode(t: ExecutionContext, err: unknown, expected: ErrorCode) {
  t.true(err instanceof NodeletError, `expected a NodeletError, got ${String(err)}`);
  t.is((err as NodeletError).code, expected);
}
