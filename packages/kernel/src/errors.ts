/**
 * The typed errors that cross capability boundaries. A caller decides retry versus give up by
 * `code`, never by parsing messages (as Virtual Kubelet's errdefs and gRPC status codes do).
 */
export type ErrorCode =
  | 'NotFound'
  | 'AlreadyExists'
  | 'InvalidInput'
  | 'FailedPrecondition'
  | 'Unavailable'
  | 'DeadlineExceeded'
  | 'Unimplemented'
  | 'Internal';

export class NodeletError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = `${code}Error`;
  }
}

export const notFound = (message: string, cause?: unknown) =>
  new NodeletError('NotFound', message, { cause });
export const alreadyExists = (message: string) => new NodeletError('AlreadyExists', message);
export const invalidInput = (message: string) => new NodeletError('InvalidInput', message);
export const failedPrecondition = (message: string) => new NodeletError('FailedPrecondition', message);
export const unavailable = (message: string, cause?: unknown) =>
  new NodeletError('Unavailable', message, { cause });
export const deadlineExceeded = (message: string) => new NodeletError('DeadlineExceeded', message);
export const unimplemented = (message: string) => new NodeletError('Unimplemented', message);

export function isErrorCode(err: unknown, code: ErrorCode): boolean {
  return err instanceof NodeletError && err.code === code;
}

/** The message of anything thrown, for log lines and status reasons. */
export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Configuration or linking refused: the message names the file/plugin/field and what to do. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

export class LinkError extends Error {
  override name = 'LinkError';
}
