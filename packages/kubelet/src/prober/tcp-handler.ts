import { connect } from 'node:net';
import { type ProbeContext, type ProbeHandler, type ProbeOutcome, runDeadline } from './probe-handler.js';
import { joinHostPort, resolveContainerPort } from './probe-spec.js';

/**
 * `tcpSocket`: success when a TCP connection to `host` (default: the pod IP) and `port` (a number or a
 * named container port) opens within the timeout; the connection is closed at once. Failures read as
 * Go's dialer words them (`dial tcp 10.244.0.5:8080: connect: connection refused`), which is what users
 * of upstream see in their events.
 */
export const tcpSocketHandler: ProbeHandler = {
  type: 'tcpSocket',
  probe: (ctx) => ctx.clock.track(runTcpProbe(ctx), ctx.timeoutMs),
};

async function runTcpProbe(ctx: ProbeContext): Promise<ProbeOutcome> {
  const action = ctx.probe.tcpSocket!;
  const port = resolveContainerPort(action.port, ctx.container);
  const host = action.host || ctx.podIP || '127.0.0.1';
  const addr = joinHostPort(host, port);
  const deadline = runDeadline(ctx);
  return new Promise<ProbeOutcome>((resolve) => {
    const socket = connect({ host, port });
    const onTimeout = () => done({ result: 'failure', output: `dial tcp ${addr}: i/o timeout` });
    const done = (outcome: ProbeOutcome) => {
      deadline.cancel();
      deadline.signal.removeEventListener('abort', onTimeout);
      socket.destroy();
      resolve(outcome);
    };
    if (deadline.signal.aborted) return onTimeout();
    deadline.signal.addEventListener('abort', onTimeout, { once: true });
    socket.once('connect', () => done({ result: 'success', output: '' }));
    socket.once('error', (err: NodeJS.ErrnoException) =>
      done({ result: 'failure', output: `dial tcp ${addr}: ${dialError(err)}` }),
    );
  });
}

/** A socket error as Go's net package says it. */
export function dialError(err: NodeJS.ErrnoException): string {
  switch (err.code) {
    case 'ECONNREFUSED':
      return 'connect: connection refused';
    case 'EHOSTUNREACH':
      return 'connect: no route to host';
    case 'ENETUNREACH':
      return 'connect: network is unreachable';
    case 'ECONNRESET':
      return 'read: connection reset by peer';
    case 'ETIMEDOUT':
      return 'i/o timeout';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `lookup ${(err as { hostname?: string }).hostname ?? ''}: no such host`;
    default:
      return err.message;
  }
}
