import type { FieldError } from '@nodelet/api';

/**
 * Errors as the API server returns them: a `Status` object (meta/v1) with the upstream reason and HTTP
 * code, so clients (`kubectl`, client-go's `errors.IsNotFound`, @kubernetes/client-node) read them as they
 * read a real cluster's. Reasons and codes follow k8s.io/apimachinery/pkg/api/errors.
 */
export type StatusReason =
  | 'BadRequest'
  | 'Unauthorized'
  | 'Forbidden'
  | 'NotFound'
  | 'MethodNotAllowed'
  | 'NotAcceptable'
  | 'AlreadyExists'
  | 'Conflict'
  | 'Gone'
  | 'Expired'
  | 'RequestEntityTooLarge'
  | 'RequestURITooLong'
  | 'UnsupportedMediaType'
  | 'Invalid'
  | 'TooManyRequests'
  | 'InternalError'
  | 'ServiceUnavailable'
  | 'Timeout'
  | 'NotImplemented';

export interface StatusCause {
  reason?: string;
  message?: string;
  field?: string;
}

export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  uid?: string;
  causes?: StatusCause[];
  retryAfterSeconds?: number;
}

export interface Status {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: Record<string, never>;
  status: 'Success' | 'Failure';
  message?: string;
  reason?: StatusReason | '';
  details?: StatusDetails;
  code: number;
}

export class ApiError extends Error {
  constructor(
    readonly code: number,
    readonly reason: StatusReason,
    message: string,
    readonly details?: StatusDetails,
  ) {
    super(message);
    this.name = 'ApiError';
  }

  toStatus(): Status {
    return {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: this.message,
      reason: this.reason,
      ...(this.details ? { details: this.details } : {}),
      code: this.code,
    };
  }
}

/** `pods`, `endpointslices.discovery.k8s.io`: how upstream names a resource in messages. */
export interface GroupResource {
  group: string;
  resource: string;
}

export function qualifiedResource(gr: GroupResource): string {
  return gr.group ? `${gr.resource}.${gr.group}` : gr.resource;
}

export function successStatus(details?: StatusDetails): Status {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Success',
    ...(details ? { details } : {}),
    code: 200,
  };
}

export const notFound = (gr: GroupResource, name: string) =>
  new ApiError(404, 'NotFound', `${qualifiedResource(gr)} "${name}" not found`, {
    name,
    ...(gr.group ? { group: gr.group } : {}),
    kind: gr.resource,
  });

export const alreadyExists = (gr: GroupResource, name: string) =>
  new ApiError(409, 'AlreadyExists', `${qualifiedResource(gr)} "${name}" already exists`, {
    name,
    ...(gr.group ? { group: gr.group } : {}),
    kind: gr.resource,
  });

export const conflict = (gr: GroupResource, name: string, why: string) =>
  new ApiError(
    409,
    'Conflict',
    `Operation cannot be fulfilled on ${qualifiedResource(gr)} "${name}": ${why}`,
    {
      name,
      ...(gr.group ? { group: gr.group } : {}),
      kind: gr.resource,
    },
  );

export const staleObject =
  'the object has been modified; please apply your changes to the latest version and try again';

export const badRequest = (message: string) => new ApiError(400, 'BadRequest', message);

export const forbidden = (gr: GroupResource, name: string, why: string) =>
  new ApiError(403, 'Forbidden', `${qualifiedResource(gr)}${name ? ` "${name}"` : ''} is forbidden: ${why}`, {
    ...(name ? { name } : {}),
    ...(gr.group ? { group: gr.group } : {}),
    kind: gr.resource,
  });

export const methodNotAllowed = (
  message = 'the server does not allow this method on the requested resource',
) => new ApiError(405, 'MethodNotAllowed', message);

export const expired = (message: string) => new ApiError(410, 'Expired', message);

export const gone = (message: string) => new ApiError(410, 'Gone', message);

export const tooLarge = (limit: number) =>
  new ApiError(413, 'RequestEntityTooLarge', `Request entity too large: limit is ${limit}`);

export const unsupportedMediaType = (contentType: string) =>
  new ApiError(
    415,
    'UnsupportedMediaType',
    `the body of the request was in an unknown format - accepted media types include: application/json, application/yaml${contentType ? ` (got ${contentType})` : ''}`,
  );

export const internalError = (message: string) =>
  new ApiError(500, 'InternalError', `Internal error occurred: ${message}`, {
    causes: [{ message }],
  });

export const notImplemented = (message: string) => new ApiError(501, 'NotImplemented', message);

/** The cause reason of a field error, from its message (`Required value` → FieldValueRequired). */
export function causeReason(message: string): string {
  if (message.startsWith('Required value')) return 'FieldValueRequired';
  if (message.startsWith('Duplicate value')) return 'FieldValueDuplicate';
  if (message.startsWith('Not found')) return 'FieldValueNotFound';
  if (message.startsWith('Unsupported value')) return 'FieldValueNotSupported';
  if (message.startsWith('Forbidden')) return 'FieldValueForbidden';
  if (message.startsWith('Too long')) return 'FieldValueTooLong';
  if (message.startsWith('Too many')) return 'FieldValueTooMany';
  return 'FieldValueInvalid';
}

/**
 * 422 Invalid: `Pod "x" is invalid: spec.containers: Required value` (a kind of a named group is qualified:
 * `TokenRequest.authentication.k8s.io "" is invalid: …`), or with several errors
 * `Pod "x" is invalid: [a: …, b: …]`; one cause per field error.
 */
export function invalid(kind: string, group: string, name: string, errors: readonly FieldError[]): ApiError {
  const parts = errors.map((e) => `${e.field}: ${e.message}`);
  const list = parts.length === 1 ? parts[0]! : `[${parts.join(', ')}]`;
  const qualifiedKind = group ? `${kind}.${group}` : kind;
  return new ApiError(422, 'Invalid', `${qualifiedKind} "${name}" is invalid: ${list}`, {
    name,
    ...(group ? { group } : {}),
    kind,
    causes: errors.map((e) => ({ reason: causeReason(e.message), message: e.message, field: e.field })),
  });
}

export function isApiError(err: unknown): err is ApiError {
  return err instanceof ApiError;
}
