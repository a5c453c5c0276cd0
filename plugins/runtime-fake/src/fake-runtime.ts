import { failedPrecondition, invalidInput, NodeletError } from '@nodelet/kernel';
import {
  ContainerConfig,
  ContainerState,
  type ImageService,
  PodSandboxConfig,
  type RuntimeService,
  type ProbeType,
  type StatsProvider,
} from '@nodelet/cri';
import {
  type ContainerBehavior,
  parseBehavior,
  PROBE_FIELDS,
  resolveProbeScript,
  SIGKILL_EXIT_CODE,
  validateBehavior,
} from './behavior.js';
import { type LogStream } from './cri-log.js';
import { type ExecHandler } from './exec.js';
import { type ProbeVerdict, probeVerdict } from './probes.js';
import { containerStateName, diskUsageBytes } from './records.js';
import { ImageApi } from './image-api.js';
import { type ScriptTarget, type Script } from './runtime-core.js';

export { RUNTIME_NAME, RUNTIME_VERSION, type FakeRuntimeOptions, type ScriptTarget } from './runtime-core.js';

/**
 * An in-memory CRI v1 runtime on the kernel clock: sandboxes with IPs, containers through the CRI
 * state machine, images, exec and logs, with behaviour scripted per container.
 *
 * Container states (upstream CRI):
 *
 *     CreateContainer ──► CREATED ──StartContainer──► RUNNING ──exit / stop / kill──► EXITED
 *                            │    (startDelay on the clock)                              │
 *                            └──── failStart: EXITED 128 StartError ──────────────────►  │
 *                                                       RemoveContainer (any state) ──► gone
 *
 * Nothing runs between calls unless a behaviour scheduled it (exitAfter, stop grace, startDelay),
 * and then through the clock (`setTimeout`, `deadline`), cancelled when the container stops or goes away: a node of
 * plain running pods holds no timers at all.
 */
export class FakeRuntime extends ImageApi implements RuntimeService, ImageService {
  private stats?: StatsProvider;

  /**
   * The Summary API of the simulated node (`stats.provider`): pods' usage from their behaviours, the
   * node's from `node` (its capacity and own usage) plus the images and writable layers on its disk.
   */
  statsProvider(): StatsProvider {
    return (this.stats ??= this.node.statsProvider(
      this,
      {
        imageBytes: () => Number(this.images.usedBytes()),
        imageCount: () => this.images.count,
        containerDiskBytes: (nowNs) => {
          let total = 0;
          for (const c of this.store.findContainers(undefined)) total += diskUsageBytes(c, nowNs);
          return total;
        },
        runningContainers: () =>
          [...this.store.findContainers(undefined)].filter(
            (c) => c.state === ContainerState.CONTAINER_RUNNING,
          ).length,
      },
      this.clock,
    ));
  }

  /**
   * Scripts the behaviour of containers created from now on whose name is `match` (or for which the
   * predicate holds), e.g. `script('app', 'exitAfter=5s,exitCode=1')` or
   * `script((c) => c.podName.startsWith('web-'), { startDelayMs: 2000 })`. Layers over behaviour
   * from annotations, field by field. Returns a function that removes the script.
   */
  script(
    match: string | ((target: ScriptTarget) => boolean),
    behavior: ContainerBehavior | string,
  ): () => void {
    const parsed = typeof behavior === 'string' ? parseBehavior(behavior) : validateBehavior({ ...behavior });
    const entry: Script = {
      matches: typeof match === 'string' ? (t) => t.name === match : match,
      behavior: parsed,
    };
    this.scripts.push(entry);
    return () => {
      const i = this.scripts.indexOf(entry);
      if (i >= 0) this.scripts.splice(i, 1);
    };
  }

  /**
   * Makes a running container die "from outside" now (a crash, the OOM killer, `kill -9`): EXITED
   * with `exitCode` (default 137), reason OOMKilled when asked, else Completed (0) / Error.
   */
  killContainer(
    containerId: string,
    exitCode = SIGKILL_EXIT_CODE,
    options: { reason?: string; message?: string } = {},
  ): void {
    const c = this.mustContainer(containerId);
    if (c.state !== ContainerState.CONTAINER_RUNNING) {
      throw failedPrecondition(
        `container "${containerId}" is in ${containerStateName(c.state)} state, not running`,
      );
    }
    this.lifecycle.exit(c, exitCode, options.reason, options.message);
  }

  /**
   * Adds an ExecSync handler; the newest is asked first, and one that returns undefined passes the
   * command on (finally to the default: true/false/echo/sleep/`sh -c "exit N"`). Returns a remover.
   */
  onExec(handler: ExecHandler): () => void {
    this.execHandlers.unshift(handler);
    return () => {
      const i = this.execHandlers.indexOf(handler);
      if (i >= 0) this.execHandlers.splice(i, 1);
    };
  }

  /**
   * How the container answers its next probe of `type` (httpGet, tcpSocket or grpc, asked by the
   * runtime's probe handlers, see probes.ts), by its probe script; counts the probe. Throws NotFound
   * for a container it does not have.
   */
  answerProbe(containerId: string, type: ProbeType): ProbeVerdict {
    const c = this.mustContainer(containerId);
    const counts = (c.probeCounts ??= { liveness: 0, readiness: 0, startup: 0 });
    return probeVerdict(c.probes, type, ++counts[type]);
  }

  /**
   * Re-scripts the probes of an existing container from now on, e.g.
   * `scriptProbes(id, 'readinessFail')`, `scriptProbes(id, { probeTimeout: true })`, or `''` for
   * healthy again. Only the probe keys (probeFail, livenessFail, readinessFail, startupFail,
   * probeFailAfter, probeTimeout) are allowed; the count for probeFailAfter starts again.
   */
  scriptProbes(containerId: string, behavior: ContainerBehavior | string): void {
    const c = this.mustContainer(containerId);
    const parsed = typeof behavior === 'string' ? parseBehavior(behavior) : validateBehavior({ ...behavior });
    const other = Object.keys(parsed).filter((k) => !PROBE_FIELDS.includes(k as keyof ContainerBehavior));
    if (other.length > 0) {
      throw invalidInput(
        `scriptProbes takes only probe keys (${PROBE_FIELDS.join(', ')}); not ${other.join(', ')}`,
      );
    }
    c.probes = resolveProbeScript(parsed);
    c.probeCounts = undefined;
  }

  /** The container's log lines in CRI format (the newest `maxLogLines`), without newlines. */
  logs(containerId: string): string[] {
    return this.mustContainer(containerId).logs?.snapshot() ?? [];
  }

  /** Writes `text` to a running container's stdout or stderr, as the process would. */
  writeLog(containerId: string, text: string, stream: LogStream = 'stdout'): void {
    const c = this.mustContainer(containerId);
    if (c.state !== ContainerState.CONTAINER_RUNNING) {
      throw failedPrecondition(
        `container "${containerId}" is in ${containerStateName(c.state)} state, not running`,
      );
    }
    this.appendLog(c, stream, text);
  }

  /** Sets a runtime condition (RuntimeReady, NetworkReady, …) as Status reports it. */
  setCondition(type: string, status: boolean, reason = '', message = ''): void {
    this.conditions.set(type, { type, status, reason, message });
  }

  /** false: every CRI call fails with Unavailable, as when the runtime's socket is gone. Containers keep running. */
  setAvailable(available: boolean): void {
    this.available = available;
  }

  /** Makes future pulls of `ref` fail with a registry 404 (or succeed again). Without a tag: every tag. */
  setImageMissing(ref: string, missing = true): void {
    this.images.setMissing(ref, missing);
  }

  /** Makes an image present without a pull (as `ctr images import` does); returns its id. */
  loadImage(ref: string): string {
    return this.images.add(ref).id;
  }

  /**
   * Gives the image `source` names the tag `target` as well (as `ctr images tag`): ListImages shows
   * one image with both tags, and RemoveImage of one tag leaves the other. Returns the image id.
   */
  tagImage(source: string, target: string): string {
    return this.images.tag(source, target).id;
  }

  /** The configuration a container was created with (a copy). */
  containerConfig(containerId: string): ContainerConfig {
    return ContainerConfig.fromPartial(this.mustContainer(containerId).config);
  }

  /** The configuration a sandbox was created with (a copy). */
  sandboxConfig(podSandboxId: string): PodSandboxConfig {
    return PodSandboxConfig.fromPartial(this.mustSandbox(podSandboxId).config);
  }

  /** How much the runtime holds: for simulations and leak checks. */
  counts(): { sandboxes: number; containers: number; running: number; images: number; podIPs: number } {
    let running = 0;
    let podIPs = 0;
    for (const c of this.store.allContainers()) if (c.state === ContainerState.CONTAINER_RUNNING) running++;
    for (const s of this.store.allSandboxes()) if (s.ip !== '') podIPs++;
    return {
      sandboxes: this.store.sandboxCount,
      containers: this.store.containerCount,
      running,
      images: this.images.count,
      podIPs,
    };
  }

  /** Cancels every pending timer (scripted exits, stop deadlines, start delays) and stops the streaming server. For shutdown. */
  close(): void {
    this.streaming.close();
    for (const c of this.store.allContainers()) {
      this.lifecycle.release(c);
      if (c.starting) {
        c.starting.cancel();
        c.starting.reject(new NodeletError('Unavailable', 'runtime-fake: the runtime was closed'));
        c.starting = undefined;
      }
    }
  }
}
