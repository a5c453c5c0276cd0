/**
 * What the CRI conformance suite needs from a target, and the helpers its tests share: requests
 * shaped the way the kubelet fills them, bounded waits, and cleanup of everything a test created.
 */
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ExecutionContext } from 'ava';
import { RealClock, errorMessage } from '@nodelet/kernel';
import {
  ContainerConfig,
  ContainerState,
  CriLabels,
  NamespaceMode,
  PodSandboxConfig,
  containerLogPath,
  parseCriLogLine,
  podLogsDirectory,
  type ContainerStatus,
  type CriLogLine,
  type ImageService,
  type RuntimeService,
} from '../index.js';

/** A runtime under test. */
export interface ConformanceTarget {
  readonly runtime: RuntimeService;
  readonly image: ImageService;
  /** A present busybox image (sh, echo, sleep, trap) that containers run. Never removed. */
  readonly busyboxImage: string;
  /** A reference no reachable registry has: PullImage of it must fail. */
  readonly missingImage: string;
  /** Makes a new image present without a registry (ctr import, FakeRuntime.loadImage). */
  loadImage(ref: string): Promise<void>;
  /** Removes what loadImage made, if a failed test left it. */
  dropImage?(ref: string): Promise<void>;
  /**
   * Writes output as a running container's process would, for targets whose containers do not run
   * their command (the fake). Real runtimes leave it out: their processes write by themselves.
   */
  writeOutput?(containerId: string, text: string): void;
  close(): Promise<void>;
}

export type ConformanceFactory = () => Promise<ConformanceTarget>;

/** Test cases a target cannot run, with the reason shown as the skipped test's title. */
export interface ConformanceOptions {
  /** PullImage of a present image contacts a registry on this target (containerd does). */
  skipPullPresent?: string;
}

/** A reference no registry has: every target fails to pull it (the fake is told so, containerd finds no registry). */
export const MISSING_IMAGE = 'nodelet.invalid/conformance-missing:1';
/** Present on every target (the fake preloads it; scripts/containerd/setup.sh imports it). */
export const BUSYBOX_IMAGE = 'docker.io/library/busybox:latest';

/** The label on everything one run of the suite creates, so cleanup finds it and lists ignore others. */
export const RUN_LABEL = 'conformance.nodelet.dev/run';
/**
 * The fake runtime's scripting annotation prefix (`ContainerSpec.fake`): real runtimes ignore it, the
 * fake reads it instead of running the command.
 */
const FAKE_BEHAVIOR = 'runtime-fake.nodelet.dev/';

/** The suite measures real runtimes: its waits and durations are on real time. */
export const clock = new RealClock();

export interface Pod {
  readonly id: string;
  readonly config: PodSandboxConfig;
  readonly logDirectory: string;
}

export interface PodSpec {
  name: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  hostNetwork?: boolean;
}

export interface ContainerSpec {
  name: string;
  /** What a real runtime runs (busybox). */
  command: string[];
  /** The same behaviour for the fake runtime, which does not run commands (`exitAfter=0s,exitCode=3`). */
  fake?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

type T = ExecutionContext<unknown>;

/** Per-run state and the request builders. */
export class Kit {
  private pods = 0;

  constructor(
    readonly target: ConformanceTarget,
    readonly runId: string,
    readonly logRoot: string,
  ) {}

  get runtime(): RuntimeService {
    return this.target.runtime;
  }

  /** A selector for what this run (and `caseLabel`, when given) created. */
  selector(extra: Record<string, string> = {}): Record<string, string> {
    return { [RUN_LABEL]: this.runId, ...extra };
  }

  /** RunPodSandbox with a kubelet-shaped config; stopped and removed when the test ends. */
  async runPod(t: T, spec: PodSpec): Promise<Pod> {
    const namespace = 'conformance';
    const uid = `${this.runId}-${++this.pods}`;
    const logDirectory = podLogsDirectory(this.logRoot, namespace, spec.name, uid);
    await mkdir(logDirectory, { recursive: true }); // the kubelet creates it, not the runtime
    const config = PodSandboxConfig.fromPartial({
      metadata: { name: spec.name, namespace, uid, attempt: 0 },
      // As upstream: a host-network pod shares the node's UTS namespace and gets no hostname
      // (containerd's runc refuses to set one).
      hostname: spec.hostNetwork ? '' : spec.name,
      logDirectory,
      labels: {
        [CriLabels.PodName]: spec.name,
        [CriLabels.PodNamespace]: namespace,
        [CriLabels.PodUID]: uid,
        ...this.selector(),
        ...spec.labels,
      },
      annotations: { 'kubernetes.io/config.source': 'conformance', ...spec.annotations },
      linux: spec.hostNetwork
        ? { securityContext: { namespaceOptions: { network: NamespaceMode.NODE } } }
        : { securityContext: { namespaceOptions: { network: NamespaceMode.POD } } },
    });
    const { podSandboxId } = await this.runtime.runPodSandbox({ config, runtimeHandler: '' });
    t.teardown(() => removePod(this.runtime, podSandboxId));
    return { id: podSandboxId, config, logDirectory };
  }

  /** The ContainerConfig the kubelet would send for `spec` (image with userSpecifiedImage, log path, labels). */
  containerConfig(pod: Pod, spec: ContainerSpec): ContainerConfig {
    const podLabels = pod.config.labels;
    return ContainerConfig.fromPartial({
      metadata: { name: spec.name, attempt: 0 },
      image: { image: this.target.busyboxImage, userSpecifiedImage: 'busybox' },
      command: spec.command,
      logPath: containerLogPath(spec.name, 0),
      labels: {
        [CriLabels.PodName]: podLabels[CriLabels.PodName]!,
        [CriLabels.PodNamespace]: podLabels[CriLabels.PodNamespace]!,
        [CriLabels.PodUID]: podLabels[CriLabels.PodUID]!,
        [CriLabels.ContainerName]: spec.name,
        ...this.selector(),
        ...spec.labels,
      },
      annotations: {
        ...(spec.fake !== undefined ? { [`${FAKE_BEHAVIOR}${spec.name}`]: spec.fake } : {}),
        ...spec.annotations,
      },
    });
  }

  async createContainer(pod: Pod, spec: ContainerSpec): Promise<string> {
    const { containerId } = await this.runtime.createContainer({
      podSandboxId: pod.id,
      config: this.containerConfig(pod, spec),
      sandboxConfig: pod.config,
    });
    return containerId;
  }

  async startContainer(pod: Pod, spec: ContainerSpec): Promise<string> {
    const id = await this.createContainer(pod, spec);
    await this.runtime.startContainer({ containerId: id });
    return id;
  }

  async containerStatus(id: string): Promise<ContainerStatus> {
    const { status } = await this.runtime.containerStatus({ containerId: id, verbose: false });
    if (!status) throw new Error(`ContainerStatus of ${id} has no status`);
    return status;
  }

  /** Polls ContainerStatus until the container is in `state` (bounded). */
  async waitForState(id: string, state: ContainerState, timeoutMs = 15_000): Promise<ContainerStatus> {
    let last: ContainerStatus | undefined;
    await waitFor(
      `container ${id.slice(0, 12)} to be ${ContainerState[state]}`,
      async () => (last = await this.containerStatus(id)).state === state,
      timeoutMs,
    );
    return last!;
  }

  /** The container's log lines, read from `<logDirectory>/<logPath>` and parsed; [] if no file yet. */
  async logLines(pod: Pod, containerName: string, suffix = ''): Promise<CriLogLine[]> {
    const path = join(pod.logDirectory, containerLogPath(containerName, 0)) + suffix;
    const text = await readFile(path, 'utf8').catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return '';
      throw err;
    });
    return text
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => parseCriLogLine(line));
  }

  /** Waits until the log holds a line with `content` on `stream` (bounded); returns every line. */
  async waitForLog(
    pod: Pod,
    containerName: string,
    stream: 'stdout' | 'stderr',
    content: string,
    suffix = '',
  ): Promise<CriLogLine[]> {
    let lines: CriLogLine[] = [];
    await waitFor(`"${content}" on ${stream} of ${containerName}`, async () => {
      lines = await this.logLines(pod, containerName, suffix);
      return lines.some((l) => l.stream === stream && l.content === content);
    });
    return lines;
  }
}

/** Polls `check` every 50 ms until it holds; fails after `timeoutMs` naming what it waited for. */
export async function waitFor(
  what: string,
  check: () => boolean | Promise<boolean>,
  timeoutMs = 10_000,
): Promise<void> {
  const deadline = clock.deadline(timeoutMs);
  try {
    for (;;) {
      if (await check()) return;
      if (deadline.expired) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
      await clock.sleep(50);
    }
  } finally {
    deadline.cancel();
  }
}

/**
 * StopPodSandbox + RemovePodSandbox, tolerating a sandbox already gone. RemovePodSandbox can fail
 * with "device or resource busy" while containerd removes the network namespace: retried (bounded).
 */
export async function removePod(runtime: RuntimeService, id: string): Promise<void> {
  await runtime.stopPodSandbox({ podSandboxId: id }).catch(() => undefined);
  for (let attempt = 1; ; attempt++) {
    try {
      await runtime.removePodSandbox({ podSandboxId: id });
      return;
    } catch (err) {
      if (attempt >= 10 || !/device or resource busy/.test(errorMessage(err))) throw err;
      await clock.sleep(300);
    }
  }
}
