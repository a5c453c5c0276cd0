import { isErrorCode } from '@nodelet/kernel';
import { expand } from '../env.js';
import type { ProbeContext, ProbeHandler, ProbeOutcome } from './probe-handler.js';
import { MAX_PROBE_OUTPUT_BYTES } from './probe-spec.js';

/**
 * `exec`: runs the command in the container through CRI ExecSync with the probe's timeout. Exit 0 is
 * success; any other exit is a failure whose output (stdout then stderr, bounded) is the message; a
 * timeout is a failure (`command "sleep 5" timed out`, as upstream since ExecProbeTimeout went GA); any
 * other runtime error (the container is gone, the runtime is down) is an error: retried, then dropped.
 *
 * As upstream, `$(VAR)` in the command expands only from the container's literal `env` values: a probe
 * does not see the downward API.
 */
export const execHandler: ProbeHandler = {
  type: 'exec',
  probe: runExecProbe,
};

async function runExecProbe(ctx: ProbeContext): Promise<ProbeOutcome> {
  const vars = new Map((ctx.container.env ?? []).map((e) => [e.name, e.value ?? ''] as [string, string]));
  const cmd = (ctx.probe.exec?.command ?? []).map((arg) => expand(arg, vars));
  try {
    const res = await ctx.runtime.execSync({
      containerId: ctx.containerId,
      cmd,
      timeout: BigInt(Math.max(1, Math.ceil(ctx.timeoutMs / 1000))),
    });
    const output = boundedOutput(res.stdout, res.stderr);
    return { result: res.exitCode === 0 ? 'success' : 'failure', output };
  } catch (err) {
    if (isErrorCode(err, 'DeadlineExceeded')) {
      return { result: 'failure', output: `command ${JSON.stringify(cmd.join(' '))} timed out` };
    }
    throw err;
  }
}

function boundedOutput(stdout: Uint8Array | undefined, stderr: Uint8Array | undefined): string {
  const parts: Uint8Array[] = [];
  let size = 0;
  for (const part of [stdout, stderr]) {
    if (!part || part.length === 0 || size >= MAX_PROBE_OUTPUT_BYTES) continue;
    const take = part.subarray(0, MAX_PROBE_OUTPUT_BYTES - size);
    parts.push(take);
    size += take.length;
  }
  if (size === 0) return '';
  return Buffer.concat(parts).toString('utf8');
}
