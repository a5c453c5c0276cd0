/**
 * A problem with one field of an object, worded as the API server words it (apimachinery's
 * field.Error): `spec.containers[0].name: Required value`, `spec.restartPolicy: Unsupported value:
 * "Sometimes": supported values: "Always", "OnFailure", "Never"`.
 */
export interface FieldError {
  /** Dotted path with list indices: `spec.containers[0].ports[1].name`. */
  field: string;
  message: string;
}

/** `field: message`, as kubectl prints a validation error. */
export function formatFieldError(e: FieldError): string {
  return `${e.field}: ${e.message}`;
}

const show = (value: unknown): string => (value === undefined ? 'null' : JSON.stringify(value));

export const fieldRequired = (field: string, detail = ''): FieldError => ({
  field,
  message: detail ? `Required value: ${detail}` : 'Required value',
});

export const fieldInvalid = (field: string, value: unknown, detail: string): FieldError => ({
  field,
  message: `Invalid value: ${show(value)}: ${detail}`,
});

export const fieldDuplicate = (field: string, value: unknown): FieldError => ({
  field,
  message: `Duplicate value: ${show(value)}`,
});

export const fieldNotFound = (field: string, value: unknown): FieldError => ({
  field,
  message: `Not found: ${show(value)}`,
});

export const fieldNotSupported = (
  field: string,
  value: unknown,
  supported: readonly string[],
): FieldError => ({
  field,
  message: `Unsupported value: ${show(value)}: supported values: ${supported.map((s) => JSON.stringify(s)).join(', ')}`,
});

export const fieldForbidden = (field: string, detail: string): FieldError => ({
  field,
  message: `Forbidden: ${detail}`,
});
