import { policyMessages } from './protobuf-policy.js';
import { badRequest, unsupportedMediaType } from './status.js';
import { podTemplateMessages } from './protobuf-pod-template.js';

/**
 * Request bodies in the Kubernetes protobuf encoding (`application/vnd.kubernetes.protobuf`), for the kinds
 * kubectl's typed clients send that way: `kubectl create namespace|configmap|secret|service|serviceaccount`,
 * `kubectl certificate approve|deny`, `kubectl create token`, `kubectl auth whoami|can-i` and
 * `kubectl create role|clusterrole|rolebinding|clusterrolebinding`, `kubectl create deployment`,
 * `kubectl create job|cronjob`, and the DeleteOptions and Evictions of `kubectl drain`, `kubectl create pdb`.
 * The envelope is the 4-byte magic `k8s\0` and a runtime.Unknown (typeMeta, raw, contentEncoding,
 * contentType); `raw` is the object's message. The field numbers are those of the upstream Go types'
 * `protobuf` struct tags. A body of another kind is refused (415) with a message that says to send JSON.
 * Responses are always JSON, which these clients accept.
 */
export type Kind =
  | 'string'
  | 'bytes'
  | 'int'
  | 'bool'
  | 'time'
  | 'intOrString'
  | { message: string }
  | { map: 'string' | 'bytes' | 'quantity' }
  /** An embedded Go struct: its fields are the parent's in JSON. */
  | { inline: string }
  | { repeated: 'string' | { message: string } };

export type Fields = Record<number, [string, Kind]>;

const objectReference: Fields = {
  1: ['kind', 'string'],
  2: ['namespace', 'string'],
  3: ['name', 'string'],
  4: ['uid', 'string'],
  5: ['apiVersion', 'string'],
  6: ['resourceVersion', 'string'],
  7: ['fieldPath', 'string'],
};

const messages: Record<string, Fields> = {
  ...podTemplateMessages,
  TypeMeta: { 1: ['apiVersion', 'string'], 2: ['kind', 'string'] },
  ObjectMeta: {
    1: ['name', 'string'],
    2: ['generateName', 'string'],
    3: ['namespace', 'string'],
    4: ['selfLink', 'string'],
    5: ['uid', 'string'],
    6: ['resourceVersion', 'string'],
    7: ['generation', 'int'],
    8: ['creationTimestamp', 'time'],
    9: ['deletionTimestamp', 'time'],
    10: ['deletionGracePeriodSeconds', 'int'],
    11: ['labels', { map: 'string' }],
    12: ['annotations', { map: 'string' }],
    13: ['ownerReferences', { repeated: { message: 'OwnerReference' } }],
    14: ['finalizers', { repeated: 'string' }],
  },
  OwnerReference: {
    1: ['kind', 'string'],
    3: ['name', 'string'],
    4: ['uid', 'string'],
    5: ['apiVersion', 'string'],
    6: ['controller', 'bool'],
    7: ['blockOwnerDeletion', 'bool'],
  },
  ObjectReference: objectReference,
  LocalObjectReference: { 1: ['name', 'string'] },
  Namespace: {
    1: ['metadata', { message: 'ObjectMeta' }],
    2: ['spec', { message: 'NamespaceSpec' }],
    3: ['status', { message: 'NamespaceStatus' }],
  },
  NamespaceSpec: { 1: ['finalizers', { repeated: 'string' }] },
  NamespaceStatus: { 1: ['phase', 'string'] },
  ConfigMap: {
    1: ['metadata', { message: 'ObjectMeta' }],
    2: ['data', { map: 'string' }],
    3: ['binaryData', { map: 'bytes' }],
    4: ['immutable', 'bool'],
  },
  Secret: {
    1: ['metadata', { message: 'ObjectMeta' }],
    2: ['data', { map: 'bytes' }],
    3: ['type', 'string'],
    4: ['stringData', { map: 'string' }],
    5: ['immutable', 'bool'],
  },
  ServiceAccount: {
    1: ['metadata', { message: 'ObjectMeta' }],
    2: ['secrets', { repeated: { message: 'ObjectReference' } }],
    3: ['imagePullSecrets', { repeated: { message: 'LocalObjectReference' } }],
    4: ['automountServiceAccountToken', 'bool'],
  },
  Service: {
    1: ['metadata', { message: 'ObjectMeta' }],
    2: ['spec', { message: 'ServiceSpec' }],
    3: ['status', { message: 'ServiceStatus' }],
  },
  ServiceSpec: {
    1: ['ports', { repeated: { message: 'ServicePort' } }],
    2: ['selector', { map: 'string' }],
    3: ['clusterIP', 'string'],
    4: ['type', 'string'],
    5: ['externalIPs', { repeated: 'string' }],
    7: ['sessionAffinity', 'string'],
    8: ['loadBalancerIP', 'string'],
    9: ['loadBalancerSourceRanges', { repeated: 'string' }],
    10: ['externalName', 'string'],
    11: ['externalTrafficPolicy', 'string'],
    12: ['healthCheckNodePort', 'int'],
    13: ['publishNotReadyAddresses', 'bool'],
    17: ['ipFamilyPolicy', 'string'],
    18: ['clusterIPs', { repeated: 'string' }],
    19: ['ipFamilies', { repeated: 'string' }],
    20: ['allocateLoadBalancerNodePorts', 'bool'],
    21: ['loadBalancerClass', 'string'],
    22: ['internalTrafficPolicy', 'string'],
    23: ['trafficDistribution', 'string'],
  },
  ServicePort: {
    1: ['name', 'string'],
    2: ['protocol', 'string'],
    3: ['port', 'int'],
    4: ['targetPort', 'intOrString'],
    5: ['nodePort', 'int'],
    6: ['appProtocol', 'string'],
  },
  ServiceStatus: {},
  // authentication.k8s.io/v1: `kubectl create token`, `kubectl auth whoami`, TokenReviews of typed clients.
  TokenRequest: {
    1: ['metadata', { message: 'ObjectMeta' }],
    2: ['spec', { message: 'TokenRequestSpec' }],
  },
  TokenRequestSpec: {
    1: ['audiences', { repeated: 'string' }],
    3: ['boundObjectRef', { message: 'BoundObjectReference' }],
    4: ['expirationSeconds', 'int'],
  },
  BoundObjectReference: {
    1: ['kind', 'string'],
    2: ['apiVersion', 'string'],
    3: ['name', 'string'],
    4: ['uid', 'string'],
  },
  TokenReview: {
    1: ['metadata', { message: 'ObjectMeta' }],
    2: ['spec', { message: 'TokenReviewSpec' }],
  },
  TokenReviewSpec: {
    1: ['token', 'string'],
    2: ['audiences', { repeated: 'string' }],
  },
  SelfSubjectReview: { 1: ['metadata', { message: 'ObjectMeta' }] },
  // authorization.k8s.io/v1: the SubjectAccessReviews of webhook authorizers (kubelets), `kubectl auth can-i`.
  SubjectAccessReview: {
    1: ['metadata', { message: 'ObjectMeta' }],
    2: ['spec', { message: 'SubjectAccessReviewSpec' }],
  },
  SubjectAccessReviewSpec: {
    1: ['resourceAttributes', { message: 'ResourceAttributes' }],
    2: ['nonResourceAttributes', { message: 'NonResourceAttributes' }],
    3: ['user', 'string'],
    4: ['groups', { repeated: 'string' }],
    6: ['uid', 'string'],
  },
  SelfSubjectAccessReview: {
    1: ['metadata', { message: 'ObjectMeta' }],
    2: ['spec', { message: 'SelfSubjectAccessReviewSpec' }],
  },
  SelfSubjectAccessReviewSpec: {
    1: ['resourceAttributes', { message: 'ResourceAttributes' }],
    2: ['nonResourceAttributes', { message: 'NonResourceAttributes' }],
  },
  ResourceAttributes: {
    1: ['namespace', 'string'],
    2: ['verb', 'string'],
    3: ['group', 'string'],
    4: ['version', 'string'],
    5: ['resource', 'string'],
    6: ['subresource', 'string'],
    7: ['name', 'string'],
  },
  NonResourceAttributes: {
    1: ['path', 'string'],
    2: ['verb', 'string'],
  },
  SelfSubjectRulesReview: {
    1: ['metadata', { message: 'ObjectMeta' }],
    2: ['spec', { message: 'SelfSubjectRulesReviewSpec' }],
  },
  SelfSubjectRulesReviewSpec: { 1: ['namespace', 'string'] },
  // rbac.authorization.k8s.io/v1: `kubectl create role|clusterrole|rolebinding|clusterrolebinding`.
  Role: {
    1: ['metadata', { message: 'ObjectMeta' }],
    2: ['rules', { repeated: { message: 'PolicyRule' } }],
  },
  ClusterRole: {
    1: ['metadata', { message: 'ObjectMeta' }],
    2: ['rules', { repeated: { message: 'PolicyRule' } }],
    3: ['aggregationRule', { message: 'AggregationRule' }],
  },
  PolicyRule: {
    1: ['verbs', { repeated: 'string' }],
    2: ['apiGroups', { repeated: 'string' }],
    3: ['resources', { repeated: 'string' }],
    4: ['resourceNames', { repeated: 'string' }],
    5: ['nonResourceURLs', { repeated: 'string' }],
  },
  AggregationRule: { 1: ['clusterRoleSelectors', { repeated: { message: 'LabelSelector' } }] },
  LabelSelector: {
    1: ['matchLabels', { map: 'string' }],
    2: ['matchExpressions', { repeated: { message: 'LabelSelectorRequirement' } }],
  },
  LabelSelectorRequirement: {
    1: ['key', 'string'],
    2: ['operator', 'string'],
    3: ['values', { repeated: 'string' }],
  },
  RoleBinding: {
    1: ['metadata', { message: 'ObjectMeta' }],
    2: ['subjects', { repeated: { message: 'Subject' } }],
    3: ['roleRef', { message: 'RoleRef' }],
  },
  ClusterRoleBinding: {
    1: ['metadata', { message: 'ObjectMeta' }],
    2: ['subjects', { repeated: { message: 'Subject' } }],
    3: ['roleRef', { message: 'RoleRef' }],
  },
  Subject: {
    1: ['kind', 'string'],
    2: ['apiGroup', 'string'],
    3: ['name', 'string'],
    4: ['namespace', 'string'],
  },
  RoleRef: {
    1: ['apiGroup', 'string'],
    2: ['kind', 'string'],
    3: ['name', 'string'],
  },
  // apps/v1: `kubectl create deployment` (name, replicas, selector, and a template of containers with
  // image, command, args and ports: what its flags can set).
  Deployment: {
    1: ['metadata', { message: 'ObjectMeta' }],
    2: ['spec', { message: 'DeploymentSpec' }],
  },
  DeploymentSpec: {
    1: ['replicas', 'int'],
    2: ['selector', { message: 'LabelSelector' }],
    3: ['template', { message: 'PodTemplateSpec' }],
    4: ['strategy', { message: 'DeploymentStrategy' }],
    5: ['minReadySeconds', 'int'],
    6: ['revisionHistoryLimit', 'int'],
    7: ['paused', 'bool'],
    9: ['progressDeadlineSeconds', 'int'],
  },
  DeploymentStrategy: {
    1: ['type', 'string'],
    2: ['rollingUpdate', { message: 'RollingUpdateDeployment' }],
  },
  RollingUpdateDeployment: {
    1: ['maxUnavailable', 'intOrString'],
    2: ['maxSurge', 'intOrString'],
  },
  // batch/v1: `kubectl create job` (also `--from=cronjob/…`, which sends the CronJob's job template) and
  // `kubectl create cronjob`.
  Job: {
    1: ['metadata', { message: 'ObjectMeta' }],
    2: ['spec', { message: 'JobSpec' }],
  },
  JobSpec: {
    1: ['parallelism', 'int'],
    2: ['completions', 'int'],
    3: ['activeDeadlineSeconds', 'int'],
    4: ['selector', { message: 'LabelSelector' }],
    5: ['manualSelector', 'bool'],
    6: ['template', { message: 'PodTemplateSpec' }],
    7: ['backoffLimit', 'int'],
    8: ['ttlSecondsAfterFinished', 'int'],
    9: ['completionMode', 'string'],
    10: ['suspend', 'bool'],
  },
  CronJob: {
    1: ['metadata', { message: 'ObjectMeta' }],
    2: ['spec', { message: 'CronJobSpec' }],
  },
  CronJobSpec: {
    1: ['schedule', 'string'],
    2: ['startingDeadlineSeconds', 'int'],
    3: ['concurrencyPolicy', 'string'],
    4: ['suspend', 'bool'],
    5: ['jobTemplate', { message: 'JobTemplateSpec' }],
    6: ['successfulJobsHistoryLimit', 'int'],
    7: ['failedJobsHistoryLimit', 'int'],
    8: ['timeZone', 'string'],
  },
  JobTemplateSpec: {
    1: ['metadata', { message: 'ObjectMeta' }],
    2: ['spec', { message: 'JobSpec' }],
  },
  // `kubectl certificate approve|deny` sends the whole object to the approval subresource.
  CertificateSigningRequest: {
    1: ['metadata', { message: 'ObjectMeta' }],
    2: ['spec', { message: 'CertificateSigningRequestSpec' }],
    3: ['status', { message: 'CertificateSigningRequestStatus' }],
  },
  CertificateSigningRequestSpec: {
    1: ['request', 'bytes'],
    2: ['username', 'string'],
    3: ['uid', 'string'],
    4: ['groups', { repeated: 'string' }],
    5: ['usages', { repeated: 'string' }],
    7: ['signerName', 'string'],
    8: ['expirationSeconds', 'int'],
  },
  CertificateSigningRequestStatus: {
    1: ['conditions', { repeated: { message: 'CertificateSigningRequestCondition' } }],
    2: ['certificate', 'bytes'],
  },
  CertificateSigningRequestCondition: {
    1: ['type', 'string'],
    2: ['reason', 'string'],
    3: ['message', 'string'],
    4: ['lastUpdateTime', 'time'],
    5: ['lastTransitionTime', 'time'],
    6: ['status', 'string'],
  },
  ...policyMessages,
};

const magic = Buffer.from([0x6b, 0x38, 0x73, 0x00]);

class Reader {
  pos = 0;
  constructor(readonly buf: Buffer) {}

  get done(): boolean {
    return this.pos >= this.buf.length;
  }

  varint(): number {
    let result = 0;
    let shift = 0;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.buf.length) throw badRequest('protobuf body is truncated');
      const b = this.buf[this.pos++]!;
      result += (b & 0x7f) * 2 ** shift;
      if ((b & 0x80) === 0) return result;
      shift += 7;
    }
    throw badRequest('protobuf varint is too long');
  }

  bytes(): Buffer {
    const n = this.varint();
    if (this.pos + n > this.buf.length) throw badRequest('protobuf body is truncated');
    const out = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }

  skip(wire: number): void {
    if (wire === 0) this.varint();
    else if (wire === 1) this.pos += 8;
    else if (wire === 2) this.bytes();
    else if (wire === 5) this.pos += 4;
    else throw badRequest(`protobuf wire type ${wire} is not supported`);
  }
}

function decodeMessage(buf: Buffer, name: string): Record<string, unknown> {
  const fields = messages[name]!;
  const out: Record<string, unknown> = {};
  const r = new Reader(buf);
  while (!r.done) {
    const key = r.varint();
    const field = Math.floor(key / 8);
    const wire = key % 8;
    const spec = fields[field];
    if (!spec) {
      r.skip(wire);
      continue;
    }
    const [json, kind] = spec;
    if (typeof kind === 'object' && 'inline' in kind) {
      Object.assign(out, decodeMessage(r.bytes(), kind.inline));
      continue;
    }
    const value = readValue(r, wire, kind, out[json]);
    // Go writes zero values of non-pointer fields; JSON omits them (omitempty): so does this.
    if ((value === '' || value === 0) && !keepZero.has(json)) continue;
    if (value === false && dropFalse.has(json)) continue;
    out[json] = value;
  }
  return out;
}

/** Non-pointer booleans: Go writes false, JSON omits it. */
const dropFalse = new Set(['publishNotReadyAddresses', 'readOnly', 'hostNetwork']);

/** Pointer fields whose zero value means something. */
const keepZero = new Set([
  'deletionGracePeriodSeconds',
  'replicas',
  'gracePeriodSeconds',
  'minAvailable',
  'maxUnavailable',
  'parallelism',
  'completions',
  'backoffLimit',
  'ttlSecondsAfterFinished',
  'startingDeadlineSeconds',
  'successfulJobsHistoryLimit',
  'failedJobsHistoryLimit',
  'terminationGracePeriodSeconds',
  'tolerationSeconds',
]);

function readValue(r: Reader, wire: number, kind: Kind, previous: unknown): unknown {
  if (kind === 'string') return r.bytes().toString('utf8');
  if (kind === 'bytes') return r.bytes().toString('base64');
  if (kind === 'int') return r.varint();
  if (kind === 'bool') return r.varint() !== 0;
  if (kind === 'time') {
    const t = new Reader(r.bytes());
    let seconds = 0;
    while (!t.done) {
      const key = t.varint();
      if (key >> 3 === 1) seconds = t.varint();
      else t.skip(key & 7);
    }
    // Go's zero time (a template's creationTimestamp) is null in JSON: left out, like an empty string.
    if (seconds === 0) return '';
    return new Date(seconds * 1000).toISOString().replace('.000Z', 'Z');
  }
  if (kind === 'intOrString') {
    const m = new Reader(r.bytes());
    let type = 0;
    let intVal = 0;
    let strVal = '';
    while (!m.done) {
      const key = m.varint();
      if (key >> 3 === 1) type = m.varint();
      else if (key >> 3 === 2) intVal = m.varint();
      else if (key >> 3 === 3) strVal = m.bytes().toString('utf8');
      else m.skip(key & 7);
    }
    return type === 1 ? strVal : intVal;
  }
  if ('message' in kind) return decodeMessage(r.bytes(), kind.message);
  if ('map' in kind) {
    const entry = new Reader(r.bytes());
    let k = '';
    let v = '';
    while (!entry.done) {
      const key = entry.varint();
      if (key >> 3 === 1) k = entry.bytes().toString('utf8');
      else if (key >> 3 === 2) v = mapValue(entry.bytes(), kind.map);
      else entry.skip(key & 7);
    }
    return { ...((previous as Record<string, string>) ?? {}), [k]: v };
  }
  if ('inline' in kind) return decodeMessage(r.bytes(), kind.inline); // merged by the caller
  const list = Array.isArray(previous) ? previous : [];
  if (kind.repeated === 'string') {
    if (wire !== 2) throw badRequest('protobuf repeated string must be length-delimited');
    list.push(r.bytes().toString('utf8'));
  } else {
    list.push(decodeMessage(r.bytes(), kind.repeated.message));
  }
  return list;
}

/** A map entry's value: text, bytes (base64 in JSON), or a resource.Quantity (its string, field 1). */
function mapValue(raw: Buffer, kind: 'string' | 'bytes' | 'quantity'): string {
  if (kind === 'bytes') return raw.toString('base64');
  if (kind === 'string') return raw.toString('utf8');
  const q = new Reader(raw);
  let text = '';
  while (!q.done) {
    const key = q.varint();
    if (key >> 3 === 1) text = q.bytes().toString('utf8');
    else q.skip(key & 7);
  }
  return text;
}

/** A Kubernetes protobuf body as the JSON object it encodes. */
export function decodeProtobuf(body: Buffer): Record<string, unknown> {
  if (body.length < 4 || !body.subarray(0, 4).equals(magic)) {
    throw badRequest('protobuf body does not start with the Kubernetes magic number');
  }
  const r = new Reader(body.subarray(4));
  let typeMeta: Record<string, unknown> = {};
  let raw: Buffer | undefined;
  while (!r.done) {
    const key = r.varint();
    const field = key >> 3;
    if (field === 1) typeMeta = decodeMessage(r.bytes(), 'TypeMeta');
    else if (field === 2) raw = r.bytes();
    else r.skip(key & 7);
  }
  const kind = String(typeMeta.kind ?? '');
  if (!messages[kind] || ['TypeMeta', 'ObjectMeta'].includes(kind) || !raw) {
    throw unsupportedMediaType(`application/vnd.kubernetes.protobuf for kind ${kind || '(none)'}; send JSON`);
  }
  return { apiVersion: typeMeta.apiVersion, kind, ...decodeMessage(raw, kind) };
}
