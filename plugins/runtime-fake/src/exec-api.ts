/** The fake runtime's ExecSync (handlers, then the default commands; timeouts on the clock) and streaming calls. */
import { deadlineExceeded, failedPrecondition } from '@nodelet/kernel';
import {
  type AttachRequest,
  type AttachResponse,
  ContainerState,
  type ExecRequest,
  type ExecResponse,
  type ExecSyncRequest,
  type ExecSyncResponse,
  type PortForwardRequest,
  type PortForwardResponse,
} from '@nodelet/cri';
import { type ExecContext, type ExecResult } from './exec.js';
import { containerStateName } from './records.js';
import { ContainerApi } from './container-api.js';
import { toBuffer } from './runtime-core.js';
import { FakeStreamingServer, podEcho } from './streaming-server.js';
import { execSessionHandler } from './streaming-exec.js';

export abstract class ExecApi extends ContainerApi {
  async execSync(req: ExecSyncRequest): Promise<ExecSyncResponse> {
    this.check();
    const c = this.mustContainer(req.containerId);
    if (c.state !== ContainerState.CONTAINER_RUNNING) {
      throw failedPrecondition(
        `failed to exec in container: container is in ${containerStateName(c.state)} state`,
      );
    }
    const cmd = [...(req.cmd ?? [])];
    const controller = new AbortController();
    const sm = c.sandbox.metadata;
    const context: ExecContext = {
      containerId: c.id,
      containerName: c.metadata.name,
      podSandboxId: c.sandbox.id,
      podName: sm.name,
      podNamespace: sm.namespace,
      podUid: sm.uid,
      clock: this.clock,
      signal: controller.signal,
    };
    // The deadline aborts the handler's signal first, then fails the call, as a CRI runtime's context does.
    const timeoutS = Number(req.timeout ?? 0);
    const deadline = timeoutS > 0 ? this.clock.deadline(timeoutS * 1000) : undefined;
    const timedOut =
      deadline &&
      new Promise<never>((_, reject) =>
        deadline.signal.addEventListener(
          'abort',
          () => {
            controller.abort(deadlineExceeded('exec timed out'));
            reject(
              deadlineExceeded(
                `failed to exec in container: timeout ${timeoutS}s exceeded: context deadline exceeded`,
              ),
            );
          },
          { once: true },
        ),
      );
    const run = this.runExec(c.id, cmd, context);
    let result: ExecResult;
    try {
      result = await (timedOut ? Promise.race([run, timedOut]) : run);
    } finally {
      deadline?.cancel();
    }
    return {
      stdout: toBuffer(result.stdout),
      stderr: toBuffer(result.stderr),
      exitCode: result.exitCode ?? 0,
    };
  }

  protected readonly streaming = new FakeStreamingServer();

  /** A URL on the fake's streaming server, where the command runs through the same table as ExecSync. */
  async exec(req: ExecRequest): Promise<ExecResponse> {
    this.check();
    const c = this.runningContainer(req.containerId);
    const request = { cmd: req.cmd, stdin: req.stdin, stdout: req.stdout, stderr: req.stderr, tty: req.tty };
    return { url: await this.streaming.url({ kind: 'exec', handler: this.sessionHandler(c.id), request }) };
  }

  /** Attach has no process output to show in the fake: it ends when the client closes stdin. */
  async attach(req: AttachRequest): Promise<AttachResponse> {
    this.check();
    const c = this.runningContainer(req.containerId);
    const request = { stdin: req.stdin, stdout: req.stdout, stderr: req.stderr, tty: req.tty };
    return { url: await this.streaming.url({ kind: 'attach', handler: this.sessionHandler(c.id), request }) };
  }

  async portForward(req: PortForwardRequest): Promise<PortForwardResponse> {
    this.check();
    const s = this.mustSandbox(req.podSandboxId);
    return { url: await this.streaming.url({ kind: 'portforward', handler: podEcho(s.metadata) }) };
  }

  private runningContainer(id: string) {
    const c = this.mustContainer(id);
    if (c.state !== ContainerState.CONTAINER_RUNNING) {
      throw failedPrecondition(`container ${id} is not running (${containerStateName(c.state)})`);
    }
    return c;
  }

  private sessionHandler(containerId: string) {
    return execSessionHandler((cmd) => this.execSync({ containerId, cmd, timeout: 0n }));
  }
}
