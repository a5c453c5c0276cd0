/**
 * gRPC status codes ↔ the kernel's error codes, in both directions, for the gRPC client (a
 * remote status becomes a NodeletError) and `serveCri` (a thrown NodeletError becomes a status).
 */
import { status as GrpcStatus } from '@grpc/grpc-js';
import { NodeletError, errorMessage, type ErrorCode } from '@nodelet/kernel';

export { GrpcStatus };

/** What a grpc-js server callback or stream 'error' accepts. */
export interface GrpcStatusObject {
  code: GrpcStatus;
  details: string;
}

const toGrpc: Record<ErrorCode, GrpcStatus> = {
  NotFound: GrpcStatus.NOT_FOUND,
  AlreadyExists: GrpcStatus.ALREADY_EXISTS,
  InvalidInput: GrpcStatus.INVALID_ARGUMENT,
  FailedPrecondition: GrpcStatus.FAILED_PRECONDITION,
  Unavailable: GrpcStatus.UNAVAILABLE,
  DeadlineExceeded: GrpcStatus.DEADLINE_EXCEEDED,
  Unimplemented: GrpcStatus.UNIMPLEMENTED,
  Internal: GrpcStatus.INTERNAL,
};

const fromGrpc: Record<GrpcStatus, ErrorCode> = {
  [GrpcStatus.OK]: 'Internal', // an error carrying OK is itself a bug
  [GrpcStatus.CANCELLED]: 'Unavailable',
  [GrpcStatus.UNKNOWN]: 'Internal',
  [GrpcStatus.INVALID_ARGUMENT]: 'InvalidInput',
  [GrpcStatus.DEADLINE_EXCEEDED]: 'DeadlineExceeded',
  [GrpcStatus.NOT_FOUND]: 'NotFound',
  [GrpcStatus.ALREADY_EXISTS]: 'AlreadyExists',
  [GrpcStatus.PERMISSION_DENIED]: 'Internal',
  [GrpcStatus.RESOURCE_EXHAUSTED]: 'Unavailable',
  [GrpcStatus.FAILED_PRECONDITION]: 'FailedPrecondition',
  [GrpcStatus.ABORTED]: 'Unavailable',
  [GrpcStatus.OUT_OF_RANGE]: 'InvalidInput',
  [GrpcStatus.UNIMPLEMENTED]: 'Unimplemented',
  [GrpcStatus.INTERNAL]: 'Internal',
  [GrpcStatus.UNAVAILABLE]: 'Unavailable',
  [GrpcStatus.DATA_LOSS]: 'Internal',
  [GrpcStatus.UNAUTHENTICATED]: 'Internal',
};

/** The kernel error code for a gRPC status code. Retryable statuses (ABORTED, RESOURCE_EXHAUSTED, CANCELLED) map to Unavailable. */
export function errorCodeFromGrpc(code: number): ErrorCode {
  return fromGrpc[code as GrpcStatus] ?? 'Internal';
}

/** The gRPC status code for a kernel error code. */
export function grpcCodeFromError(code: ErrorCode): GrpcStatus {
  return toGrpc[code] ?? GrpcStatus.UNKNOWN;
}

function isGrpcError(err: unknown): err is { code: number; details?: unknown; message?: unknown } {
  return typeof err === 'object' && err !== null && typeof (err as { code?: unknown }).code === 'number';
}

/**
 * A gRPC failure (a grpc-js ServiceError or any `{ code, details }`) as a NodeletError. The
 * message is the status details (the peer's own message, without grpc-js's "5 NOT_FOUND:" prefix);
 * the original error is the cause. A NodeletError passes through unchanged.
 */
export function toNodeletError(err: unknown): NodeletError {
  if (err instanceof NodeletError) return err;
  if (isGrpcError(err)) {
    const code = errorCodeFromGrpc(err.code);
    const message =
      typeof err.details === 'string' && err.details !== ''
        ? err.details
        : typeof err.message === 'string' && err.message !== ''
          ? err.message
          : (GrpcStatus[err.code as GrpcStatus] ?? `gRPC status ${err.code}`);
    return new NodeletError(code, message, { cause: err });
  }
  return new NodeletError('Internal', errorMessage(err), { cause: err });
}

/**
 * Anything thrown by a capability implementation as a gRPC status: a NodeletError by its code,
 * anything else as UNKNOWN (what Go's gRPC does with a plain error). The message becomes details.
 */
export function toGrpcStatus(err: unknown): GrpcStatusObject {
  if (err instanceof NodeletError) return { code: grpcCodeFromError(err.code), details: err.message };
  return { code: GrpcStatus.UNKNOWN, details: errorMessage(err) };
}
