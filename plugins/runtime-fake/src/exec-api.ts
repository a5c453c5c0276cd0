/** The fake runtime's ExecSync (handlers, then the default commands; timeouts on the clock); no streaming server. */
import { deadlineExceeded, failedPrecondition, unimplemented } from '@nodelet/kernel';
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

  async exec(_req?: ExecRequest): Promise<ExecResponse> {
    this.check();
    throw unimplemented('the fake runtime has no streaming server: Exec is not implemented (use ExecSync)');
  }

  async attach(_req?: AttachRequest): Promise<AttachResponse> {
    this.check();
    throw unimplemented('the fake runtime has no streaming server: Attach is not implemented');
  }

  async portForward(_req?: PortForwardRequest): Promise<PortForwardResponse> {
    this.check();
    throw unimplemented('the fake runtime has no streaming server: PortForward is not implemented');
  }
}
