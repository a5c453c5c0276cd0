import {
  type FieldError,
  fieldDuplicate,
  fieldForbidden,
  fieldInvalid,
  fieldNotFound,
  fieldRequired,
} from './field-error.js';
import { validatePodNames } from './dns-validation.js';
import { portNumber, validateProbes } from './probe-spec-validation.js';
import { schemaFields } from './schema.js';
import { isObj, list, obj, type Obj, oneOf } from './validation-shapes.js';
import type { Pod } from './types.js';

/**
 * Pod validation as the API server does it (pkg/apis/core/validation), for the rules a node depends on:
 * names, containers, images, policies, ports, volumes and their mounts, environment variable names.
 * Messages have the API server's shape (`spec.containers: Required value`).
 *
 * It checks a pod before or after defaulting (`applyPodDefaults`): a field that has a default is
 * checked only when it is set. It never throws on a malformed object (a string where a list belongs);
 * `findSchemaErrors` reports those, and this skips what it cannot read.
 */
export function validatePod(pod: Pod): FieldError[] {
  const errors: FieldError[] = [];
  const p = pod as unknown as Obj;
  const metadata = obj(p.metadata);
  validateMetadata(metadata, errors);

  const spec = obj(p.spec);
  if (!isObj(p.spec)) {
    errors.push(fieldRequired('spec'));
    return errors;
  }
  validatePodSpec(spec, 'spec', errors);
  return errors;
}

// ----- names ----------------------------------------------------------------------------------------

const dns1123Label = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const dns1123Subdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const qualifiedNamePart = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;

/** Problems with `value` as an RFC 1123 label (container, volume, namespace names); empty when valid. */
export function dns1123LabelErrors(value: string): string[] {
  const out: string[] = [];
  if (value.length > 63) out.push('must be no more than 63 characters');
  if (!dns1123Label.test(value)) {
    out.push(
      "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start " +
        "and end with an alphanumeric character (e.g. 'my-name', or '123-abc', regex used for validation is " +
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
    );
  }
  return out;
}

/** Problems with `value` as an RFC 1123 subdomain (pod and node names); empty when valid. */
export function dns1123SubdomainErrors(value: string): string[] {
  const out: string[] = [];
  if (value.length > 253) out.push('must be no more than 253 characters');
  if (!dns1123Subdomain.test(value)) {
    out.push(
      "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must " +
        "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is " +
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
    );
  }
  return out;
}

/** Problems with `value` as an IANA service name (a named port); empty when valid. */
export function portNameErrors(value: string): string[] {
  const out: string[] = [];
  if (value.length > 15) out.push('must be no more than 15 characters');
  if (!/^[-a-z0-9]+$/.test(value)) out.push('must contain only alpha-numerics (a-z, 0-9), and hyphens (-)');
  if (value.includes('--')) out.push('must not contain consecutive hyphens');
  if (!/[a-z]/.test(value)) out.push('must contain at least one letter (a-z)');
  if (value.startsWith('-') || value.endsWith('-')) out.push('must not begin or end with a hyphen');
  return out;
}

/** Problems with `value` as a label or annotation key (`[prefix/]name`); empty when valid. */
export function qualifiedNameErrors(value: string): string[] {
  const parts = value.split('/');
  let name = value;
  const out: string[] = [];
  if (parts.length > 2) {
    return [
      "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an " +
        "alphanumeric character, with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
    ];
  }
  if (parts.length === 2) {
    const prefix = parts[0]!;
    name = parts[1]!;
    if (prefix.length === 0) out.push('prefix part must be non-empty');
    else out.push(...dns1123SubdomainErrors(prefix).map((m) => `prefix part ${m}`));
  }
  if (name.length === 0) out.push('name part must be non-empty');
  else {
    if (name.length > 63) out.push('name part must be no more than 63 characters');
    if (!qualifiedNamePart.test(name)) {
      out.push(
        "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an " +
          "alphanumeric character (e.g. 'MyName', or 'my.name', or '123-abc')",
      );
    }
  }
  return out;
}

function labelValueErrors(value: string): string[] {
  const out: string[] = [];
  if (value.length > 63) out.push('must be no more than 63 characters');
  if (value !== '' && !qualifiedNamePart.test(value)) {
    out.push(
      "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must " +
        "start and end with an alphanumeric character (e.g. 'MyValue', or 'my_value', or '12345')",
    );
  }
  return out;
}

/** Kubernetes 1.34 accepts any printable ASCII character except '=' in an environment variable name. */
export function envVarNameErrors(value: string): string[] {
  return /^[\x20-\x3c\x3e-\x7e]+$/.test(value)
    ? []
    : ["a valid environment variable name must consist only of printable ASCII characters other than '='"];
}

// ----- metadata -------------------------------------------------------------------------------------

const totalAnnotationSizeLimit = 256 * 1024;

function validateMetadata(metadata: Obj, errors: FieldError[]): void {
  const name = metadata.name;
  if (typeof name !== 'string' || name === '') {
    errors.push(fieldRequired('metadata.name', 'name or generateName is required'));
  } else {
    for (const m of dns1123SubdomainErrors(name)) errors.push(fieldInvalid('metadata.name', name, m));
  }
  const namespace = metadata.namespace;
  if (typeof namespace === 'string' && namespace !== '') {
    for (const m of dns1123LabelErrors(namespace))
      errors.push(fieldInvalid('metadata.namespace', namespace, m));
  }
  for (const [key, value] of Object.entries(obj(metadata.labels))) {
    for (const m of qualifiedNameErrors(key)) errors.push(fieldInvalid('metadata.labels', key, m));
    if (typeof value === 'string') {
      for (const m of labelValueErrors(value)) errors.push(fieldInvalid(`metadata.labels`, value, m));
    }
  }
  let annotationBytes = 0;
  for (const [key, value] of Object.entries(obj(metadata.annotations))) {
    for (const m of qualifiedNameErrors(key.toLowerCase()))
      errors.push(fieldInvalid('metadata.annotations', key, m));
    annotationBytes += key.length + (typeof value === 'string' ? value.length : 0);
  }
  if (annotationBytes > totalAnnotationSizeLimit) {
    errors.push({
      field: 'metadata.annotations',
      message: `Too long: may not be more than ${totalAnnotationSizeLimit} bytes`,
    });
  }
}

// ----- spec -----------------------------------------------------------------------------------------

const restartPolicies = ['Always', 'OnFailure', 'Never'];
const dnsPolicies = ['ClusterFirstWithHostNet', 'ClusterFirst', 'Default', 'None'];
const pullPolicies = ['Always', 'IfNotPresent', 'Never'];
const terminationMessagePolicies = ['File', 'FallbackToLogsOnError'];
const protocols = ['TCP', 'UDP', 'SCTP'];

function validatePodSpec(spec: Obj, path: string, errors: FieldError[]): void {
  const volumeNames = validateVolumes(list(spec.volumes), `${path}.volumes`, errors);

  const containers = list(spec.containers);
  if (containers.length === 0) errors.push(fieldRequired(`${path}.containers`));
  const seen = new Set<string>();
  const hostNetwork = spec.hostNetwork === true;
  list(spec.initContainers).forEach((c, i) =>
    validateContainer(obj(c), `${path}.initContainers[${i}]`, volumeNames, seen, hostNetwork, errors, true),
  );
  containers.forEach((c, i) =>
    validateContainer(obj(c), `${path}.containers[${i}]`, volumeNames, seen, hostNetwork, errors),
  );
  const targets = new Set(seen);
  list(spec.ephemeralContainers).forEach((c, i) => {
    const at = `${path}.ephemeralContainers[${i}]`;
    validateContainer(obj(c), at, volumeNames, seen, hostNetwork, errors);
    validateEphemeralOnly(obj(c), at, targets, errors);
  });

  oneOf(spec.restartPolicy, `${path}.restartPolicy`, restartPolicies, errors);
  oneOf(spec.dnsPolicy, `${path}.dnsPolicy`, dnsPolicies, errors);
  validatePodNames(spec, path, errors);

  const grace = spec.terminationGracePeriodSeconds;
  if (typeof grace === 'number' && grace < 0) {
    errors.push(
      fieldInvalid(`${path}.terminationGracePeriodSeconds`, grace, 'must be greater than or equal to 0'),
    );
  }
  const deadline = spec.activeDeadlineSeconds;
  if (typeof deadline === 'number' && (deadline < 1 || deadline > 2147483647)) {
    errors.push(
      fieldInvalid(`${path}.activeDeadlineSeconds`, deadline, 'must be between 1 and 2147483647, inclusive'),
    );
  }
  if (typeof spec.nodeName === 'string' && spec.nodeName !== '') {
    for (const m of dns1123SubdomainErrors(spec.nodeName)) {
      errors.push(fieldInvalid(`${path}.nodeName`, spec.nodeName, m));
    }
  }
}

/** What an ephemeral container may not have (upstream validateEphemeralContainers), and its target. */
const ephemeralForbidden = [
  'ports',
  'livenessProbe',
  'readinessProbe',
  'startupProbe',
  'lifecycle',
  'resources',
  'resizePolicy',
  'restartPolicy',
];

function validateEphemeralOnly(c: Obj, path: string, targets: Set<string>, errors: FieldError[]): void {
  for (const field of ephemeralForbidden) {
    // Set means not zero, as upstream's allow list reads it: kubectl debug sends `resources: {}`.
    if (!isZero(c[field])) {
      errors.push(fieldForbidden(`${path}.${field}`, 'cannot be set for an Ephemeral Container'));
    }
  }
  const target = c.targetContainerName;
  if (typeof target === 'string' && target !== '' && !targets.has(target)) {
    errors.push(fieldNotFound(`${path}.targetContainerName`, target));
  }
}

const isZero = (v: unknown): boolean =>
  v === undefined ||
  v === null ||
  v === '' ||
  v === false ||
  v === 0 ||
  (Array.isArray(v) && v.length === 0) ||
  (typeof v === 'object' && !Array.isArray(v) && Object.values(v).every(isZero));

/** Every field of V1Volume except its name is a volume source; the schema says which those are. */
function volumeSourceFields(): string[] {
  return [...(schemaFields('V1Volume')?.keys() ?? [])].filter((k) => k !== 'name');
}

function validateVolumes(volumes: unknown[], path: string, errors: FieldError[]): Set<string> {
  const names = new Set<string>();
  const sources = volumeSourceFields();
  volumes.forEach((raw, i) => {
    const volume = obj(raw);
    const at = `${path}[${i}]`;
    const name = volume.name;
    if (typeof name !== 'string' || name === '') errors.push(fieldRequired(`${at}.name`));
    else {
      for (const m of dns1123LabelErrors(name)) errors.push(fieldInvalid(`${at}.name`, name, m));
      if (names.has(name)) errors.push(fieldDuplicate(`${at}.name`, name));
      names.add(name);
    }
    const set = sources.filter((s) => volume[s] !== undefined && volume[s] !== null);
    if (set.length === 0) errors.push(fieldRequired(at, 'must specify a volume type'));
    for (const extra of set.slice(1))
      errors.push(fieldForbidden(`${at}.${extra}`, 'may not specify more than 1 volume type'));
  });
  return names;
}

function validateContainer(
  c: Obj,
  path: string,
  volumeNames: Set<string>,
  namesSeen: Set<string>,
  hostNetwork: boolean,
  errors: FieldError[],
  init = false,
): void {
  const name = c.name;
  if (typeof name !== 'string' || name === '') errors.push(fieldRequired(`${path}.name`));
  else {
    for (const m of dns1123LabelErrors(name)) errors.push(fieldInvalid(`${path}.name`, name, m));
    if (namesSeen.has(name)) errors.push(fieldDuplicate(`${path}.name`, name));
    namesSeen.add(name);
  }

  const image = c.image;
  if (typeof image !== 'string' || image === '') errors.push(fieldRequired(`${path}.image`));
  else if (image.trim() !== image) {
    errors.push(fieldInvalid(`${path}.image`, image, 'must not have leading or trailing whitespace'));
  }
  oneOf(c.imagePullPolicy, `${path}.imagePullPolicy`, pullPolicies, errors);
  oneOf(c.terminationMessagePolicy, `${path}.terminationMessagePolicy`, terminationMessagePolicies, errors);

  const portNames = new Set<string>();
  list(c.ports).forEach((raw, i) => {
    const port = obj(raw);
    const at = `${path}.ports[${i}]`;
    if (port.containerPort === undefined || port.containerPort === null || port.containerPort === 0) {
      errors.push(fieldRequired(`${at}.containerPort`));
    } else {
      portNumber(port.containerPort, `${at}.containerPort`, errors);
    }
    if (port.hostPort !== undefined && port.hostPort !== null && port.hostPort !== 0) {
      portNumber(port.hostPort, `${at}.hostPort`, errors);
      if (hostNetwork && port.hostPort !== port.containerPort) {
        errors.push(
          fieldInvalid(
            `${at}.hostPort`,
            port.hostPort,
            'must match `containerPort` when `hostNetwork` is true',
          ),
        );
      }
    }
    oneOf(port.protocol, `${at}.protocol`, protocols, errors);
    if (typeof port.name === 'string' && port.name !== '') {
      for (const m of portNameErrors(port.name)) errors.push(fieldInvalid(`${at}.name`, port.name, m));
      if (portNames.has(port.name)) errors.push(fieldDuplicate(`${at}.name`, port.name));
      portNames.add(port.name);
    }
  });

  validateProbes(c, path, init, portNames, errors);

  list(c.env).forEach((raw, i) => {
    const env = obj(raw);
    const at = `${path}.env[${i}].name`;
    if (typeof env.name !== 'string' || env.name === '') errors.push(fieldRequired(at));
    else for (const m of envVarNameErrors(env.name)) errors.push(fieldInvalid(at, env.name, m));
  });

  const mountPaths = new Set<string>();
  list(c.volumeMounts).forEach((raw, i) => {
    const mount = obj(raw);
    const at = `${path}.volumeMounts[${i}]`;
    if (typeof mount.name !== 'string' || mount.name === '') errors.push(fieldRequired(`${at}.name`));
    else if (!volumeNames.has(mount.name)) errors.push(fieldNotFound(`${at}.name`, mount.name));
    if (typeof mount.mountPath !== 'string' || mount.mountPath === '')
      errors.push(fieldRequired(`${at}.mountPath`));
    else {
      if (mountPaths.has(mount.mountPath))
        errors.push(fieldInvalid(`${at}.mountPath`, mount.mountPath, 'must be unique'));
      mountPaths.add(mount.mountPath);
    }
  });
}
