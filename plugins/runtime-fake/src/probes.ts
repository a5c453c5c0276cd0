import type { Container } from '@nodelet/api';
import type { ProbeContext, ProbeHandler, ProbeOutcome, ProbeType } from '@nodelet/cri';
import type { ProbeScript } from './behavior.js';

/**
 * Probes of fake containers, answered by the fake runtime instead of the network.
 *
 * A fake pod's IP (10.244.0.0/16 by default) belongs to no host: the kubelet's built-in `httpGet`,
 * `tcpSocket` and `grpc` handlers would open real sockets to it, which leave the machine. The
 * runtime-fake plugin provides these handlers through `probe.handler` instead; the kubelet lets a
 * plugin's handler of a built-in type replace the built-in one, so on the fake runtime no probe opens a
 * socket. Each answers from the container's probe script (behaviour keys `probeFail`, `livenessFail`,
 * `readinessFail`, `startupFail`, `probeFailAfter=N`, `probeTimeout`; see behavior.ts): healthy unless
 * scripted, failing and timing out in the words upstream's handlers use, a timeout lasting the probe's
 * `timeoutSeconds` on the kernel clock.
 *
 * `exec` probes are not handled here: they already run through the runtime's ExecSync, scripted by the
 * command (`true`, `false`, `sh -c "exit 1"`) or `FakeRuntime.onExec`.
 */

/** How one probe is answered. */
export type ProbeVerdict = 'healthy' | 'failing' | 'timeout';

/**
 * The verdict of the `count`th probe (1-based) of `type` under `script`: failing when the type is
 * scripted to fail or the count is past `failAfter`; a failing probe times out when `timeout` is set,
 * and `timeout` alone makes every probe time out.
 */
export function probeVerdict(script: ProbeScript | undefined, type: ProbeType, count: number): ProbeVerdict {
  if (!script) return 'healthy';
  const scriptedFailure = script.failing.length > 0 || script.failAfter !== undefined;
  const failing =
    script.failing.includes(type) ||
    (script.failAfter !== undefined && count > script.failAfter) ||
    (!scriptedFailure && script.timeout);
  if (!failing) return 'healthy';
  return script.timeout ? 'timeout' : 'failing';
}

/** What the handlers ask of the runtime (FakeRuntime implements it). */
export interface ProbeAnswerer {
  answerProbe(containerId: string, type: ProbeType): ProbeVerdict;
}

/** The fake runtime's handlers for `httpGet`, `tcpSocket` and `grpc`; none opens a socket. */
export function fakeProbeHandlers(runtime: ProbeAnswerer): ProbeHandler[] {
  const handler =
    (answer: (ctx: ProbeContext, verdict: ProbeVerdict) => ProbeOutcome): ProbeHandler['probe'] =>
    async (ctx) => {
      // A lifecycle hook reaches the simulated server, which answers; it is not a probe to count.
      const verdict = ctx.hook ? 'healthy' : runtime.answerProbe(ctx.containerId, ctx.probeType);
      // A timeout lasts the probe's timeout, on the clock (virtual time in tests and simulations).
      if (verdict === 'timeout') await ctx.clock.sleep(ctx.timeoutMs);
      return answer(ctx, verdict);
    };
  return [
    { type: 'httpGet', probe: handler(httpAnswer) },
    { type: 'tcpSocket', probe: handler(tcpAnswer) },
    { type: 'grpc', probe: handler(grpcAnswer) },
  ];
}

function httpAnswer(ctx: ProbeContext, verdict: ProbeVerdict): ProbeOutcome {
  const action = ctx.probe.httpGet!;
  const scheme = (action.scheme || 'HTTP').toLowerCase();
  const host = action.host || ctx.podIP || '127.0.0.1';
  const port = containerPort(action.port, ctx.container);
  switch (verdict) {
    case 'healthy':
      return { result: 'success', output: '' }; // upstream's output on success is the (here empty) body
    case 'failing':
      return { result: 'failure', output: 'HTTP probe failed with statuscode: 500' };
    case 'timeout': {
      const url = probeUrl(scheme, host, port, action.path ?? '');
      return {
        result: 'failure',
        output: `Get ${JSON.stringify(url)}: context deadline exceeded (Client.Timeout exceeded while awaiting headers)`,
      };
    }
  }
}

function tcpAnswer(ctx: ProbeContext, verdict: ProbeVerdict): ProbeOutcome {
  const action = ctx.probe.tcpSocket!;
  const addr = joinHostPort(
    action.host || ctx.podIP || '127.0.0.1',
    containerPort(action.port, ctx.container),
  );
  switch (verdict) {
    case 'healthy':
      return { result: 'success', output: '' };
    case 'failing':
      return { result: 'failure', output: `dial tcp ${addr}: connect: connection refused` };
    case 'timeout':
      return { result: 'failure', output: `dial tcp ${addr}: i/o timeout` };
  }
}

function grpcAnswer(ctx: ProbeContext, verdict: ProbeVerdict): ProbeOutcome {
  switch (verdict) {
    case 'healthy':
      return { result: 'success', output: 'service healthy' };
    case 'failing':
      return { result: 'failure', output: 'service unhealthy (responded with "NOT_SERVING")' };
    case 'timeout':
      return {
        result: 'failure',
        output: `timeout: health rpc did not complete within ${goDuration(ctx.timeoutMs)}`,
      };
  }
}

/** A probe's port: a number, or the name of one of the container's ports (as the kubelet resolves it). */
function containerPort(port: number | string | undefined, container: Container): number {
  if (typeof port === 'number') return port;
  const named = (container.ports ?? []).find((p) => p.name === port);
  if (named) return named.containerPort;
  if (typeof port === 'string' && /^\d+$/.test(port)) return Number(port);
  throw new Error(`port "${port ?? ''}" not found in the ports of container "${container.name}"`);
}

const joinHostPort = (host: string, port: number): string =>
  host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;

function probeUrl(scheme: string, host: string, port: number, path: string): string {
  const base = `${scheme}://${joinHostPort(host, port)}`;
  try {
    return new URL(path.startsWith('/') || path === '' ? `${base}${path}` : `${base}/${path}`).href;
  } catch {
    return `${base}/`;
  }
}

/** Go's `%v` of a duration of whole seconds or ms, as the kubelet's gRPC handler words its timeout. */
function goDuration(ms: number): string {
  if (ms < 1000) return `${ms}ms`;
  const s = ms / 1000;
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  return `${m}m${s - m * 60}s`;
}
