import {
  type FieldError,
  fieldForbidden,
  fieldInvalid,
  fieldNotFound,
  fieldRequired,
} from './field-error.js';
import { portNameErrors } from './validation.js';
import { list, obj, type Obj, oneOf } from './validation-shapes.js';

// A container's probes and port references, validated as the API server does (a part of validatePod).

const probeFields = [
  ['livenessProbe', 'liveness'],
  ['readinessProbe', 'readiness'],
  ['startupProbe', 'startup'],
] as const;
const probeHandlers = ['exec', 'httpGet', 'tcpSocket', 'grpc'] as const;
const probeCounts = [
  'initialDelaySeconds',
  'timeoutSeconds',
  'periodSeconds',
  'successThreshold',
  'failureThreshold',
] as const;
const httpSchemes = ['HTTP', 'HTTPS'];
const httpHeaderName = /^[-A-Za-z0-9]+$/;

/**
 * Liveness, readiness and startup probes, as upstream's validateProbe and validateHandler: exactly one
 * handler, non-negative counts, `successThreshold` 1 for liveness and startup, a probe-level
 * `terminationGracePeriodSeconds` above 0 and never on readiness, HTTP(S) only, valid ports and header
 * names; no probes on init containers (sidecar init containers are not supported yet).
 *
 * Stricter than upstream, which fails such a probe at run time on every period: a named port must be
 * one of the container's `ports`.
 */
export function validateProbes(
  c: Obj,
  path: string,
  init: boolean,
  portNames: Set<string>,
  errors: FieldError[],
) {
  for (const [field, kind] of probeFields) {
    const raw = c[field];
    if (raw === undefined || raw === null) continue;
    const at = `${path}.${field}`;
    if (init) {
      errors.push(fieldForbidden(at, 'may not be set for init containers without restartPolicy=Always'));
      continue;
    }
    const probe = obj(raw);
    let handlers = 0;
    for (const handler of probeHandlers) {
      if (probe[handler] === undefined || probe[handler] === null) continue;
      if (handlers++ > 0) {
        errors.push(fieldForbidden(`${at}.${handler}`, 'may not specify more than 1 handler type'));
        continue;
      }
      validateProbeAction(handler, obj(probe[handler]), `${at}.${handler}`, portNames, errors);
    }
    if (handlers === 0) errors.push(fieldRequired(at, 'must specify a handler type'));
    for (const count of probeCounts) {
      const value = probe[count];
      if (typeof value === 'number' && value < 0) {
        errors.push(fieldInvalid(`${at}.${count}`, value, 'must be greater than or equal to 0'));
      }
    }
    const success = probe.successThreshold;
    // 0 is "unset" (defaulted to 1), as in Go.
    if (kind !== 'readiness' && typeof success === 'number' && success !== 1 && success !== 0) {
      errors.push(fieldInvalid(`${at}.successThreshold`, success, 'must be 1'));
    }
    const grace = probe.terminationGracePeriodSeconds;
    if (grace !== undefined && grace !== null) {
      if (kind === 'readiness') {
        errors.push(
          fieldInvalid(`${at}.terminationGracePeriodSeconds`, grace, 'must not be set for readinessProbes'),
        );
      } else if (typeof grace === 'number' && grace <= 0) {
        errors.push(fieldInvalid(`${at}.terminationGracePeriodSeconds`, grace, 'must be greater than 0'));
      }
    }
  }
}

function validateProbeAction(
  handler: (typeof probeHandlers)[number],
  action: Obj,
  at: string,
  portNames: Set<string>,
  errors: FieldError[],
): void {
  switch (handler) {
    case 'exec':
      if (list(action.command).length === 0) errors.push(fieldRequired(`${at}.command`));
      break;
    case 'httpGet':
      if (action.path === '') errors.push(fieldRequired(`${at}.path`));
      portNumOrName(action.port, `${at}.port`, portNames, errors);
      oneOf(action.scheme, `${at}.scheme`, httpSchemes, errors);
      list(action.httpHeaders).forEach((raw) => {
        const name = obj(raw).name;
        if (typeof name !== 'string' || !httpHeaderName.test(name)) {
          errors.push(
            fieldInvalid(
              `${at}.httpHeaders`,
              name,
              "a valid HTTP header must consist of alphanumeric characters or '-' (e.g. 'X-Header-Name', regex used for validation is '[-A-Za-z0-9]+')",
            ),
          );
        }
      });
      break;
    case 'tcpSocket':
      portNumOrName(action.port, `${at}.port`, portNames, errors);
      break;
    case 'grpc':
      portNumber(action.port ?? 0, `${at}.port`, errors);
      break;
  }
}

/** A port number, or the name of one of the container's ports (upstream ValidatePortNumOrName + ours). */
function portNumOrName(value: unknown, field: string, portNames: Set<string>, errors: FieldError[]): void {
  if (value === undefined || value === null) {
    errors.push(fieldRequired(field));
  } else if (typeof value === 'string') {
    const problems = portNameErrors(value);
    for (const m of problems) errors.push(fieldInvalid(field, value, m));
    if (problems.length === 0 && !portNames.has(value)) {
      const names = [...portNames].map((n) => JSON.stringify(n)).join(', ');
      const e = fieldNotFound(field, value);
      e.message += `: the container has no port of that name (${names ? `its ports: ${names}` : 'it names no ports'})`;
      errors.push(e);
    }
  } else {
    portNumber(value, field, errors);
  }
}

export function portNumber(value: unknown, field: string, errors: FieldError[]): void {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 65535) {
    errors.push(fieldInvalid(field, value, 'must be between 1 and 65535, inclusive'));
  }
}
