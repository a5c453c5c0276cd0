/** Nodes: status, roles and addresses as kubectl prints them, and taint validation. */
import {
  fieldForbidden,
  fieldInvalid,
  fieldNotSupported,
  fieldRequired,
  type FieldError,
} from '@nodelet/api';
import { isObject, type KubeObject } from '../object.js';
import { ageColumn, nameColumn, type ResourceType } from '../apiserver/resource-type.js';
import { age } from './printers.js';
import { nameRules, validateObjectMeta, validateObjectMetaUpdate } from './meta-validation.js';
import { base } from './resource-base.js';

const taintEffects = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'];

function nodeStatusCell(node: KubeObject): string {
  const ready = (node.status?.conditions ?? []).find((c: any) => c.type === 'Ready');
  // As upstream's printer: Ready, or NotReady for False and Unknown alike; Unknown only without one.
  const parts = [ready ? (ready.status === 'True' ? 'Ready' : 'NotReady') : 'Unknown'];
  if (node.spec?.unschedulable) parts.push('SchedulingDisabled');
  return parts.join(',');
}

function nodeRoles(node: KubeObject): string {
  const roles = new Set<string>();
  for (const [k, v] of Object.entries(node.metadata.labels ?? {})) {
    if (k.startsWith('node-role.kubernetes.io/')) roles.add(k.slice('node-role.kubernetes.io/'.length));
    else if (k === 'kubernetes.io/role' && v) roles.add(v);
  }
  return roles.size ? [...roles].filter(Boolean).sort().join(',') : '<none>';
}

function nodeAddress(node: KubeObject, type: string): string {
  return (node.status?.addresses ?? []).find((a: any) => a.type === type)?.address ?? '<none>';
}

export const nodes: ResourceType = base({
  group: '',
  version: 'v1',
  kind: 'Node',
  plural: 'nodes',
  singular: 'node',
  namespaced: false,
  model: 'V1Node',
  shortNames: ['no'],
  statusSubresource: true,
  subresources: [
    { name: 'status', kind: 'Node', verbs: ['get', 'patch', 'update'] },
    { name: 'proxy', kind: 'NodeProxyOptions', verbs: ['create', 'delete', 'get', 'patch', 'update'] },
  ],
  columns: [
    nameColumn,
    { name: 'Status', type: 'string', description: 'The status of the node', priority: 0 },
    { name: 'Roles', type: 'string', description: 'The roles of the node', priority: 0 },
    ageColumn,
    { name: 'Version', type: 'string', description: 'Kubelet Version reported by the node.', priority: 0 },
    {
      name: 'Internal-IP',
      type: 'string',
      description: 'List of addresses reachable to the node. Queried from cloud provider, if available.',
      priority: 1,
    },
    {
      name: 'External-IP',
      type: 'string',
      description: 'List of addresses reachable to the node. Queried from cloud provider, if available.',
      priority: 1,
    },
    {
      name: 'OS-Image',
      type: 'string',
      description: 'OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).',
      priority: 1,
    },
    {
      name: 'Kernel-Version',
      type: 'string',
      description: "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).",
      priority: 1,
    },
    {
      name: 'Container-Runtime',
      type: 'string',
      description:
        'ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).',
      priority: 1,
    },
  ],
  row: (obj, now) => {
    const info = obj.status?.nodeInfo ?? {};
    return [
      obj.metadata.name,
      nodeStatusCell(obj),
      nodeRoles(obj),
      age(obj, now),
      info.kubeletVersion ?? '',
      nodeAddress(obj, 'InternalIP'),
      nodeAddress(obj, 'ExternalIP'),
      info.osImage || '<unknown>',
      info.kernelVersion || '<unknown>',
      info.containerRuntimeVersion || '<unknown>',
    ];
  },
  fields: { 'spec.unschedulable': (o) => String(o.spec?.unschedulable === true) },
  strategy: {
    // Nodes may set status on create: a kubelet registers its node with its status.
    validate: (obj) => [
      ...validateObjectMeta(obj.metadata, nameRules.subdomain, false),
      ...validateTaints(obj),
      ...validatePodCidrs(obj),
    ],
    prepareForUpdate(obj, old) {
      obj.status = old.status;
    },
    validateUpdate: (obj, old) => [
      ...validateObjectMeta(obj.metadata, nameRules.subdomain, false),
      ...validateObjectMetaUpdate(obj.metadata, old.metadata),
      ...validateTaints(obj),
      ...validatePodCidrs(obj),
      ...validateSetOnce(obj, old),
    ],
  },
});

// An IPv4 or IPv6 CIDR as net.ParseCIDR takes it (the address part need not be the network's).
const ipv4Cidr = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/;
const ipv6Cidr = /^[0-9a-fA-F:.]*:[0-9a-fA-F:.]*\/(\d{1,3})$/;

function isCidr(text: unknown): boolean {
  if (typeof text !== 'string') return false;
  const v4 = ipv4Cidr.exec(text);
  if (v4) return v4.slice(1, 5).every((o) => Number(o) <= 255) && Number(v4[5]) <= 32;
  const v6 = ipv6Cidr.exec(text);
  return !!v6 && Number(v6[1]) <= 128;
}

/** As upstream's ValidateNode: each of spec.podCIDRs a CIDR, at most two (dual-stack), podCIDR the first. */
function validatePodCidrs(node: KubeObject): FieldError[] {
  const errors: FieldError[] = [];
  const cidrs: unknown[] = Array.isArray(node.spec?.podCIDRs) ? node.spec.podCIDRs : [];
  cidrs.forEach((c, i) => {
    if (!isCidr(c)) errors.push(fieldInvalid(`spec.podCIDRs[${i}]`, c, 'must be a valid CIDR'));
  });
  if (cidrs.length > 2)
    errors.push(fieldInvalid('spec.podCIDRs', cidrs, 'may specify no more than one CIDR for each IP family'));
  const single = node.spec?.podCIDR;
  if (single !== undefined && single !== '' && cidrs.length > 0 && single !== cidrs[0]) {
    errors.push(fieldInvalid('spec.podCIDR', single, 'must equal spec.podCIDRs[0]'));
  }
  return errors;
}

/**
 * As upstream's ValidateNodeUpdate: the node IPAM controller may give a node its pod CIDRs and a cloud
 * controller its providerID once, from unset; no one changes them afterwards (pods hold addresses from them).
 */
function validateSetOnce(node: KubeObject, old: KubeObject): FieldError[] {
  const errors: FieldError[] = [];
  const oldCidrs: unknown[] = old.spec?.podCIDRs ?? (old.spec?.podCIDR ? [old.spec.podCIDR] : []);
  const newCidrs: unknown[] = node.spec?.podCIDRs ?? (node.spec?.podCIDR ? [node.spec.podCIDR] : []);
  if (
    oldCidrs.length > 0 &&
    (oldCidrs.length !== newCidrs.length || oldCidrs.some((c, i) => c !== newCidrs[i]))
  ) {
    errors.push(
      fieldForbidden('spec.podCIDRs', 'node updates may not change podCIDR except from "" to valid'),
    );
  }
  const oldProvider = old.spec?.providerID ?? '';
  if (oldProvider !== '' && (node.spec?.providerID ?? '') !== oldProvider) {
    errors.push(
      fieldForbidden('spec.providerID', 'node updates may not change providerID except from "" to valid'),
    );
  }
  return errors;
}

function validateTaints(node: KubeObject): FieldError[] {
  const errors: FieldError[] = [];
  const taints = Array.isArray(node.spec?.taints) ? node.spec.taints : [];
  taints.forEach((t: any, i: number) => {
    if (!isObject(t)) return;
    if (typeof t.key !== 'string' || t.key === '') errors.push(fieldRequired(`spec.taints[${i}].key`));
    if (!taintEffects.includes(t.effect))
      errors.push(fieldNotSupported(`spec.taints[${i}].effect`, t.effect, taintEffects));
  });
  return errors;
}
