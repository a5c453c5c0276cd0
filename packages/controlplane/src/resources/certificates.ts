import {
  fieldForbidden,
  fieldInvalid,
  fieldNotSupported,
  fieldRequired,
  type FieldError,
} from '@nodelet/api';
import { ageColumn, nameColumn, type ResourceType } from '../apiserver/resource-type.js';
import { isObject, type KubeObject } from '../object.js';
import { parseCsr } from '../pki.js';
import { nameRules, validateObjectMeta, validateObjectMetaUpdate } from './meta-validation.js';
import { age } from './printers.js';
import { base } from './resource-base.js';

/**
 * certificates.k8s.io/v1 CertificateSigningRequests, as upstream's registry/certificates strategy keeps
 * them: `spec` is written once at create and its requestor fields (`username`, `uid`, `groups`, `extra`)
 * are the authenticated user's, never the client's; `status.certificate` is written through `status`
 * (by a signer) and the Approved/Denied conditions through `approval` (by an approver), each subresource
 * keeping what the other owns.
 */

/** The signer of kubelet client certificates, which the embedded control plane approves and signs. */
export const kubeletClientSigner = 'kubernetes.io/kube-apiserver-client-kubelet';
export const apiServerClientSigner = 'kubernetes.io/kube-apiserver-client';
export const kubeletServingSigner = 'kubernetes.io/kubelet-serving';

const knownUsages = [
  'signing',
  'digital signature',
  'content commitment',
  'key encipherment',
  'key agreement',
  'data encipherment',
  'cert sign',
  'crl sign',
  'encipher only',
  'decipher only',
  'any',
  'server auth',
  'client auth',
  'code signing',
  'email protection',
  's/mime',
  'ipsec end system',
  'ipsec tunnel',
  'ipsec user',
  'timestamping',
  'ocsp signing',
  'microsoft sgc',
  'netscape sgc',
];

const approvalTypes = ['Approved', 'Denied'];
const conditionTypes = ['Approved', 'Denied', 'Failed'];

type Condition = { type?: string; status?: string; reason?: string; message?: string };

function conditions(obj: KubeObject): Condition[] {
  const list = obj.status?.conditions;
  return Array.isArray(list) ? (list as Condition[]) : [];
}

/** The CONDITION column of kubectl: `Approved,Issued`, `Denied`, `Pending`… */
export function csrCondition(obj: KubeObject): string {
  const shown = conditions(obj)
    .filter((c) => c.status !== 'False' && c.type)
    .map((c) => c.type!);
  if (obj.status?.certificate) shown.push('Issued');
  return shown.length ? shown.join(',') : 'Pending';
}

function duration(seconds: unknown): string {
  if (typeof seconds !== 'number') return '<none>';
  if (seconds % 86400 === 0) return `${seconds / 86400}d`;
  if (seconds % 3600 === 0) return `${seconds / 3600}h`;
  if (seconds % 60 === 0) return `${seconds / 60}m`;
  return `${seconds}s`;
}

function validateCsr(obj: KubeObject): FieldError[] {
  const errors = validateObjectMeta(obj.metadata, nameRules.subdomain, false);
  const spec = isObject(obj.spec) ? obj.spec : {};
  if (typeof spec.request !== 'string' || spec.request === '') {
    errors.push(fieldRequired('spec.request'));
  } else {
    try {
      parseCsr(Buffer.from(spec.request, 'base64').toString('utf8'));
    } catch (err) {
      errors.push(fieldInvalid('spec.request', '<PEM>', (err as Error).message));
    }
  }
  if (typeof spec.signerName !== 'string' || spec.signerName === '') {
    errors.push(fieldRequired('spec.signerName'));
  } else if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?\/[-A-Za-z0-9_.~]+$/.test(spec.signerName)) {
    errors.push(
      fieldInvalid(
        'spec.signerName',
        spec.signerName,
        'must be a fully qualified domain and path of the form "example.com/signer-name"',
      ),
    );
  }
  const usages = Array.isArray(spec.usages) ? (spec.usages as unknown[]) : [];
  if (usages.length === 0) errors.push(fieldRequired('spec.usages'));
  usages.forEach((u, i) => {
    if (typeof u !== 'string' || !knownUsages.includes(u)) {
      errors.push(fieldNotSupported(`spec.usages[${i}]`, u, knownUsages));
    }
  });
  if (
    spec.expirationSeconds !== undefined &&
    (typeof spec.expirationSeconds !== 'number' || spec.expirationSeconds < 600)
  ) {
    errors.push(
      fieldInvalid(
        'spec.expirationSeconds',
        spec.expirationSeconds,
        'may not specify a duration less than 600 seconds (10 minutes)',
      ),
    );
  }
  errors.push(...validateStatus(obj));
  return errors;
}

function validateStatus(obj: KubeObject): FieldError[] {
  const errors: FieldError[] = [];
  const seen = new Set<string>();
  conditions(obj).forEach((c, i) => {
    if (!c.type) errors.push(fieldRequired(`status.conditions[${i}].type`));
    else if (!conditionTypes.includes(c.type)) {
      errors.push(fieldNotSupported(`status.conditions[${i}].type`, c.type, conditionTypes));
    } else if (seen.has(c.type)) {
      errors.push(fieldForbidden(`status.conditions[${i}].type`, `duplicate condition ${c.type}`));
    }
    if (c.type) seen.add(c.type);
    if (c.status !== undefined && !['True', 'False', 'Unknown'].includes(c.status)) {
      errors.push(
        fieldNotSupported(`status.conditions[${i}].status`, c.status, ['True', 'False', 'Unknown']),
      );
    }
  });
  if (seen.has('Approved') && seen.has('Denied')) {
    errors.push(
      fieldInvalid(
        'status.conditions',
        'Approved, Denied',
        'Approved and Denied conditions are mutually exclusive',
      ),
    );
  }
  return errors;
}

/** Conditions of `from` whose type is (or is not) an approval decision. */
const pick = (from: KubeObject, approval: boolean) =>
  conditions(from).filter((c) => approvalTypes.includes(c.type ?? '') === approval);

function validateTransition(next: KubeObject, old: KubeObject): FieldError[] {
  const errors = [...validateObjectMetaUpdate(next.metadata, old.metadata), ...validateStatus(next)];
  // A decision once made stays: Approved or Denied cannot be removed or flipped.
  for (const c of pick(old, true)) {
    if (!conditions(next).some((n) => n.type === c.type)) {
      errors.push(
        fieldForbidden('status.conditions', `updates may not remove a condition of type "${c.type}"`),
      );
    }
  }
  const oldCert = old.status?.certificate;
  if (oldCert && next.status?.certificate !== oldCert) {
    errors.push(fieldForbidden('status.certificate', 'updates may not modify existing certificate content'));
  }
  return errors;
}

export const certificateSigningRequests: ResourceType = base({
  group: 'certificates.k8s.io',
  version: 'v1',
  kind: 'CertificateSigningRequest',
  plural: 'certificatesigningrequests',
  singular: 'certificatesigningrequest',
  namespaced: false,
  model: 'V1CertificateSigningRequest',
  shortNames: ['csr'],
  statusSubresource: true,
  subresources: [
    { name: 'status', kind: 'CertificateSigningRequest', verbs: ['get', 'patch', 'update'] },
    { name: 'approval', kind: 'CertificateSigningRequest', verbs: ['get', 'patch', 'update'] },
  ],
  columns: [
    nameColumn,
    ageColumn,
    { name: 'SignerName', type: 'string', description: 'The signer the request names.', priority: 0 },
    { name: 'Requestor', type: 'string', description: 'The user who made the request.', priority: 0 },
    { name: 'RequestedDuration', type: 'string', description: 'The validity asked for.', priority: 0 },
    { name: 'Condition', type: 'string', description: 'Approval and issuance.', priority: 0 },
  ],
  row: (obj, now) => [
    obj.metadata.name,
    age(obj, now),
    obj.spec?.signerName ?? '',
    obj.spec?.username ?? '',
    duration(obj.spec?.expirationSeconds),
    csrCondition(obj),
  ],
  fields: { 'spec.signerName': (obj) => obj.spec?.signerName },
  strategy: {
    prepareForCreate: (obj, _ctx, user) => {
      const spec = isObject(obj.spec) ? obj.spec : {};
      delete spec.username;
      delete spec.uid;
      delete spec.groups;
      delete spec.extra;
      if (user) {
        spec.username = user.name;
        if (user.uid) spec.uid = user.uid;
        spec.groups = [...user.groups];
      }
      obj.spec = spec;
      obj.status = {};
    },
    validate: (obj) => validateCsr(obj),
    prepareForUpdate: (obj, old) => {
      obj.spec = old.spec; // spec is immutable
    },
    validateUpdate: (obj, old) => validateTransition(obj, old),
    prepareForStatusUpdate: (obj, old) => ({
      ...old,
      metadata: obj.metadata,
      status: {
        ...(isObject(obj.status) && obj.status.certificate !== undefined
          ? { certificate: obj.status.certificate }
          : old.status?.certificate !== undefined
            ? { certificate: old.status.certificate }
            : {}),
        conditions: [...pick(old, true), ...pick(obj, false)],
      },
    }),
    validateStatusUpdate: (obj, old) => validateTransition(obj, old),
    prepareForSubresourceUpdate: (sub, obj, old) =>
      sub === 'approval'
        ? {
            ...old,
            metadata: obj.metadata,
            status: {
              ...(old.status ?? {}),
              conditions: [...pick(obj, true), ...pick(old, false)],
            },
          }
        : undefined,
    validateSubresourceUpdate: (_sub, obj, old) => validateTransition(obj, old),
  },
});
