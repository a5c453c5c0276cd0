import type { Container, LifecycleHandler, Pod } from '@nodelet/api';
import type { RuntimeService } from '@nodelet/cri';
import { type Clock, errorMessage, type Logger } from '@nodelet/kernel';
import type { ProbeHandlerRegistry } from '../prober/probe-handler.js';

/** What an `httpGet` hook announces itself as (upstream: `kube-lifecycle/<major>.<minor>`). */
export const KUBE_LIFECYCLE_USER_AGENT = 'kube-lifecycle/1.34';

export type HookKind = 'postStart' | 'preStop';

export interface HookRunnerDeps {
  runtime: RuntimeService;
  clock: Clock;
  logger: Logger;
  /**
   * The probe handlers, for `httpGet` hooks: the same handler a probe of that pod would use — the
   * built-in one, or a plugin's (the fake runtime answers for its pods, whose IPs reach no host).
   */
  handlers: () => ProbeHandlerRegistry;
}

/** The container a hook runs for. */
export interface HookTarget {
  pod: Pod;
  container: Container;
  containerId: string;
  /** The pod's IP: the default host of an `httpGet` hook; '' while it has none. */
  podIP: string;
}

/**
 * Runs a container's lifecycle hooks as upstream's handler runner (pkg/kubelet/lifecycle): `exec`
 * through CRI ExecSync (no timeout of its own), `httpGet` to the pod IP unless `host` is set (a
 * named port resolved from the container's ports; any HTTP answer is a success — only a request that
 * gets none fails), `sleep` on the kernel clock. A `tcpSocket` handler is kept by the API for old
 * manifests but never ran upstream: it fails, as there.
 *
 * `run` resolves to undefined when the hook succeeded, else to upstream's message
 * (`Exec lifecycle hook ([sh -c exit 1]) for Container "web" in Pod "web_default(uid)" failed - …`).
 * `signal` ends a hook that outlives its time — preStop's grace period; what it leaves running is not
 * waited for.
 */
export class LifecycleHookRunner {
  constructor(private readonly deps: HookRunnerDeps) {}

  async run(
    kind: HookKind,
    handler: LifecycleHandler,
    target: HookTarget,
    signal?: AbortSignal,
  ): Promise<string | undefined> {
    const { container, pod } = target;
    const where = `for Container ${JSON.stringify(container.name)} in Pod ${JSON.stringify(formatPod(pod))}`;
    if (handler.exec) {
      const cmd = handler.exec.command ?? [];
      const failure = await this.exec(cmd, target);
      if (failure === undefined) return undefined;
      return `Exec lifecycle hook ([${cmd.join(' ')}]) ${where} failed - error: ${failure.error}, message: ${JSON.stringify(failure.output)}`;
    }
    if (handler.httpGet) {
      const error = await this.httpGet(kind, handler, target, signal);
      if (error === undefined) return undefined;
      return `HTTP lifecycle hook (${handler.httpGet.path ?? ''}) ${where} failed - error: ${error}`;
    }
    if (handler.sleep) {
      const seconds = handler.sleep.seconds;
      try {
        await this.deps.clock.sleep(seconds * 1000, signal);
        return undefined;
      } catch {
        return `Sleep lifecycle hook (${seconds}) ${where} failed - error: container terminated before sleep hook finished`;
      }
    }
    const given = Object.keys(handler).join(', ') || 'nothing';
    return `Cannot run handler: invalid handler: ${kind} sets ${given}; a hook runs exec, httpGet or sleep`;
  }

  /** ExecSync; a non-zero exit is an error in the words of the CRI client (`command '…' exited with N: …`). */
  private async exec(
    cmd: readonly string[],
    target: HookTarget,
  ): Promise<{ error: string; output: string } | undefined> {
    try {
      const res = await this.deps.runtime.execSync({
        containerId: target.containerId,
        cmd: [...cmd],
        timeout: 0n,
      });
      if (res.exitCode === 0) return undefined;
      const stdout = Buffer.from(res.stdout ?? []).toString('utf8');
      const stderr = Buffer.from(res.stderr ?? []).toString('utf8');
      return {
        error: `command '${cmd.join(' ')}' exited with ${res.exitCode}: ${stderr}`,
        output: stdout + stderr,
      };
    } catch (err) {
      return { error: errorMessage(err), output: '' };
    }
  }

  /** The request through the pod's `httpGet` handler; an error message when no answer came. */
  private async httpGet(
    kind: HookKind,
    handler: LifecycleHandler,
    target: HookTarget,
    signal: AbortSignal | undefined,
  ): Promise<string | undefined> {
    const action = handler.httpGet!;
    if (!action.host && !target.podIP) return 'failed to find networking container: the pod has no IP';
    const probe = { httpGet: action };
    const probeHandler = this.deps.handlers().handlerFor(probe);
    if (!probeHandler) return 'no handler serves httpGet';
    // A postStart hook has no timeout upstream; preStop's ends with the grace period (`signal`).
    const open = signal ?? new AbortController().signal;
    try {
      const outcome = await probeHandler.probe({
        probeType: 'liveness',
        probe,
        pod: target.pod,
        container: target.container,
        containerId: target.containerId,
        podIP: target.podIP,
        timeoutMs: HOOK_PATIENCE_MS,
        signal: open,
        runtime: this.deps.runtime,
        clock: this.deps.clock,
        logger: this.deps.logger,
        userAgent: KUBE_LIFECYCLE_USER_AGENT,
        hook: kind,
      });
      return outcome.result === 'success' || outcome.result === 'warning' ? undefined : outcome.output;
    } catch (err) {
      return errorMessage(err);
    }
  }
}

/**
 * How long, in real time, a kubelet on virtual time waits for an `httpGet` hook's I/O before moving
 * time on (see Clock.track); the hook's own end is its signal.
 */
const HOOK_PATIENCE_MS = 30_000;

/** Upstream format.Pod: `name_namespace(uid)`. */
export function formatPod(pod: Pod): string {
  const m = pod.metadata ?? {};
  return `${m.name}_${m.namespace ?? 'default'}(${m.uid})`;
}
