import { Client, credentials, Metadata, type ServiceError, status as GrpcStatus } from '@grpc/grpc-js';
import {
  decodeHealthCheckResponse,
  encodeHealthCheckRequest,
  HEALTH_CHECK_PATH,
  type HealthCheckResponse,
  servingStatusName,
} from './grpc-health.js';
import { type ProbeContext, type ProbeHandler, type ProbeOutcome, runDeadline } from './probe-handler.js';
import { goDuration, joinHostPort } from './probe-spec.js';

/**
 * `grpc`: the standard health check, `grpc.health.v1.Health/Check` with the optional `service`, over a
 * plaintext connection to the pod IP and `port`, within the timeout (connecting included). `SERVING` is
 * success; any other status, a server without the health service, a connection that cannot be made or a
 * call that does not finish in time is a failure, worded as upstream's gRPC prober words it.
 */
export const grpcHandler: ProbeHandler = {
  type: 'grpc',
  probe: (ctx) => ctx.clock.track(runGrpcProbe(ctx), ctx.timeoutMs),
};

/** `work`, or a rejection as soon as `signal` aborts (then `onAbort` runs: cancel what `work` waits on). */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal, onAbort?: () => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const abort = () => {
      onAbort?.();
      reject(signal.reason as Error);
    };
    if (signal.aborted) return abort();
    signal.addEventListener('abort', abort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', abort));
  });
}

async function runGrpcProbe(ctx: ProbeContext): Promise<ProbeOutcome> {
  const action = ctx.probe.grpc!;
  const service = action.service ?? '';
  const addr = joinHostPort(ctx.podIP || '127.0.0.1', action.port);
  const timeout = goDuration(ctx.timeoutMs);
  // The deadline is the clock's, not gRPC's (which is wall-clock time): on a virtual clock a server that
  // never answers fails the probe at exactly the timeout of virtual time.
  const deadline = runDeadline(ctx);
  const client = new Client(addr, credentials.createInsecure(), {
    'grpc.primary_user_agent': ctx.userAgent,
    'grpc.use_local_subchannel_pool': 1,
    'grpc.enable_retries': 0,
  });
  try {
    try {
      await untilAborted(
        new Promise<void>((resolve, reject) =>
          client.waitForReady(Infinity, (err) => (err ? reject(err) : resolve())),
        ),
        deadline.signal,
      );
    } catch {
      return {
        result: 'failure',
        output: `timeout: failed to connect service ${JSON.stringify(addr)} within ${timeout}: context deadline exceeded`,
      };
    }
    let response: HealthCheckResponse;
    try {
      let call: { cancel(): void } | undefined;
      response = await untilAborted(
        new Promise<HealthCheckResponse>((resolve, reject) => {
          call = client.makeUnaryRequest(
            HEALTH_CHECK_PATH,
            encodeHealthCheckRequest,
            decodeHealthCheckResponse,
            { service },
            new Metadata(),
            {},
            (err, value) => (err || !value ? reject(err ?? new Error('empty response')) : resolve(value)),
          );
        }),
        deadline.signal,
        () => call?.cancel(),
      );
    } catch (err) {
      if (deadline.signal.aborted) {
        return { result: 'failure', output: `timeout: health rpc did not complete within ${timeout}` };
      }
      const e = err as Partial<ServiceError>;
      if (e.code === GrpcStatus.UNIMPLEMENTED) {
        return {
          result: 'failure',
          output: `error: this server does not implement the grpc health protocol (grpc.health.v1.Health): ${e.details ?? ''}`,
        };
      }
      if (e.code === GrpcStatus.DEADLINE_EXCEEDED) {
        return { result: 'failure', output: `timeout: health rpc did not complete within ${timeout}` };
      }
      const text =
        typeof e.code === 'number'
          ? `rpc error: code = ${codeName(e.code)} desc = ${e.details ?? ''}`
          : (e.message ?? String(err));
      return { result: 'failure', output: `error: health rpc probe failed: ${text}` };
    }
    if (response.status !== 1) {
      return {
        result: 'failure',
        output: `service unhealthy (responded with ${JSON.stringify(servingStatusName(response.status))})`,
      };
    }
    return { result: 'success', output: 'service healthy' };
  } finally {
    deadline.cancel();
    client.close();
  }
}

/** gRPC status codes as Go's codes.Code.String() names them. */
function codeName(code: number): string {
  const names = [
    'OK',
    'Canceled',
    'Unknown',
    'InvalidArgument',
    'DeadlineExceeded',
    'NotFound',
    'AlreadyExists',
    'PermissionDenied',
    'ResourceExhausted',
    'FailedPrecondition',
    'Aborted',
    'OutOfRange',
    'Unimplemented',
    'Internal',
    'Unavailable',
    'DataLoss',
    'Unauthenticated',
  ];
  return names[code] ?? `Code(${code})`;
}
