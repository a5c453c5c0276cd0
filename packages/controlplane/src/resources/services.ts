import {
  dns1123LabelErrors,
  fieldInvalid,
  fieldNotSupported,
  fieldRequired,
  fieldDuplicate,
  fieldForbidden,
  type FieldError,
  portNameErrors,
} from '@nodelet/api';
import { isObject, type KubeObject } from '../object.js';
import { ageColumn, allVerbs, nameColumn, type ResourceType } from '../apiserver/resource-type.js';
import { age } from './printers.js';
import {
  nameRules,
  validateLabels,
  validateObjectMeta,
  validateObjectMetaUpdate,
} from './meta-validation.js';
import { clusterIPsOf, type ServiceAllocator } from './allocators.js';

/**
 * Services: defaults (type, protocol, targetPort, traffic policies, IP family), a ClusterIP from the
 * service CIDR and node ports from the node-port range for NodePort and LoadBalancer services. A requested
 * ClusterIP or node port that another Service holds is refused (422), as upstream's allocators do.
 */
const types = ['ClusterIP', 'NodePort', 'LoadBalancer', 'ExternalName'];
const protocols = ['TCP', 'UDP', 'SCTP'];
const affinities = ['ClientIP', 'None'];
const trafficPolicies = ['Cluster', 'Local'];

const keyOf = (svc: KubeObject) => `${svc.metadata.namespace}/${svc.metadata.name}`;

function ports(svc: KubeObject): Record<string, any>[] {
  return Array.isArray(svc.spec?.ports) ? svc.spec.ports.filter(isObject) : [];
}

function usesNodePorts(svc: KubeObject): boolean {
  const type = svc.spec?.type;
  return (
    type === 'NodePort' || (type === 'LoadBalancer' && svc.spec?.allocateLoadBalancerNodePorts !== false)
  );
}

function applyServiceDefaults(svc: KubeObject): void {
  if (!isObject(svc.spec)) return;
  const spec = svc.spec;
  spec.type ??= 'ClusterIP';
  spec.sessionAffinity ??= 'None';
  if (spec.sessionAffinity === 'ClientIP') {
    spec.sessionAffinityConfig ??= {};
    spec.sessionAffinityConfig.clientIP ??= {};
    spec.sessionAffinityConfig.clientIP.timeoutSeconds ??= 10800;
  }
  for (const p of ports(svc)) {
    p.protocol ??= 'TCP';
    if (p.targetPort === undefined || p.targetPort === 0 || p.targetPort === '') p.targetPort = p.port;
  }
  if (spec.type !== 'ExternalName') {
    spec.internalTrafficPolicy ??= 'Cluster';
    spec.ipFamilies ??= ['IPv4'];
    spec.ipFamilyPolicy ??= 'SingleStack';
  }
  if (spec.type === 'NodePort' || spec.type === 'LoadBalancer') spec.externalTrafficPolicy ??= 'Cluster';
  if (spec.type === 'LoadBalancer') spec.allocateLoadBalancerNodePorts ??= true;
  if (typeof spec.clusterIP === 'string' && spec.clusterIP && !Array.isArray(spec.clusterIPs)) {
    spec.clusterIPs = [spec.clusterIP];
  }
}

/** Picks what the service asks to be allocated and lacks: its ClusterIP, its node ports. */
function allocate(svc: KubeObject, allocator: ServiceAllocator): void {
  if (!isObject(svc.spec)) return;
  const spec = svc.spec;
  if (spec.type !== 'ExternalName' && (spec.clusterIP === undefined || spec.clusterIP === '')) {
    const ip = allocator.allocateIP();
    if (ip) {
      spec.clusterIP = ip;
      spec.clusterIPs = [ip];
    }
  }
  if (usesNodePorts(svc)) {
    const taken = new Set<number>(
      ports(svc)
        .map((p) => p.nodePort)
        .filter((n) => typeof n === 'number' && n > 0),
    );
    for (const p of ports(svc)) {
      if (p.nodePort === undefined || p.nodePort === 0) {
        const port = allocator.allocatePort(p.protocol ?? 'TCP', taken);
        if (port !== undefined) {
          p.nodePort = port;
          taken.add(port);
        }
      }
    }
  }
}

function validateService(svc: KubeObject, allocator: ServiceAllocator): FieldError[] {
  const errors = validateObjectMeta(svc.metadata, nameRules.dns1035, true);
  if (!isObject(svc.spec)) {
    errors.push(fieldRequired('spec'));
    return errors;
  }
  const spec = svc.spec;
  const type = spec.type;
  if (!types.includes(type)) errors.push(fieldNotSupported('spec.type', type, types));
  if (spec.sessionAffinity !== undefined && !affinities.includes(spec.sessionAffinity)) {
    errors.push(fieldNotSupported('spec.sessionAffinity', spec.sessionAffinity, affinities));
  }
  for (const f of ['externalTrafficPolicy', 'internalTrafficPolicy']) {
    if (spec[f] !== undefined && !trafficPolicies.includes(spec[f])) {
      errors.push(fieldNotSupported(`spec.${f}`, spec[f], trafficPolicies));
    }
  }
  if (type === 'ExternalName') {
    if (typeof spec.externalName !== 'string' || spec.externalName === '')
      errors.push(fieldRequired('spec.externalName'));
  }
  const headless = spec.clusterIP === 'None';
  const list = ports(svc);
  if (list.length === 0 && type !== 'ExternalName' && !headless) errors.push(fieldRequired('spec.ports'));
  const names = new Set<string>();
  const keys = new Set<string>();
  list.forEach((p, i) => {
    const at = `spec.ports[${i}]`;
    if (list.length > 1 && (typeof p.name !== 'string' || p.name === ''))
      errors.push(fieldRequired(`${at}.name`));
    if (typeof p.name === 'string' && p.name !== '') {
      for (const m of dns1123LabelErrors(p.name)) errors.push(fieldInvalid(`${at}.name`, p.name, m));
      if (names.has(p.name)) errors.push(fieldDuplicate(`${at}.name`, p.name));
      names.add(p.name);
    }
    if (!Number.isInteger(p.port) || p.port < 1 || p.port > 65535) {
      errors.push(fieldInvalid(`${at}.port`, p.port, 'must be between 1 and 65535, inclusive'));
    }
    if (!protocols.includes(p.protocol))
      errors.push(fieldNotSupported(`${at}.protocol`, p.protocol, protocols));
    const k = `${p.port}/${p.protocol}`;
    if (keys.has(k)) errors.push(fieldDuplicate(at, { port: p.port, protocol: p.protocol }));
    keys.add(k);
    if (typeof p.targetPort === 'number') {
      if (!Number.isInteger(p.targetPort) || p.targetPort < 1 || p.targetPort > 65535) {
        errors.push(fieldInvalid(`${at}.targetPort`, p.targetPort, 'must be between 1 and 65535, inclusive'));
      }
    } else if (typeof p.targetPort === 'string') {
      for (const m of portNameErrors(p.targetPort))
        errors.push(fieldInvalid(`${at}.targetPort`, p.targetPort, m));
    }
    if (p.nodePort !== undefined && p.nodePort !== 0) {
      if (!usesNodePorts(svc)) {
        errors.push(fieldForbidden(`${at}.nodePort`, `may not be used when \`type\` is '${type}'`));
      } else {
        const { min, max } = allocator.nodePorts;
        if (!Number.isInteger(p.nodePort) || p.nodePort < min || p.nodePort > max) {
          errors.push(
            fieldInvalid(
              `${at}.nodePort`,
              p.nodePort,
              `provided port is not in the valid range. The range of valid ports is ${min}-${max}`,
            ),
          );
        } else {
          const owner = allocator.portOwner(p.nodePort, p.protocol ?? 'TCP');
          if (owner && owner !== keyOf(svc)) {
            errors.push(fieldInvalid(`${at}.nodePort`, p.nodePort, 'provided port is already allocated'));
          }
        }
      }
    }
  });
  if (type !== 'ExternalName' && !headless) {
    for (const ip of clusterIPsOf(svc)) {
      if (!allocator.inRange(ip)) {
        errors.push(
          fieldInvalid(
            'spec.clusterIPs',
            [ip],
            `failed to allocate IP ${ip}: the provided IP (${ip}) is not in the valid range. The range of valid IPs is ${allocator.cidr.text}`,
          ),
        );
      } else {
        const owner = allocator.ipOwner(ip);
        if (owner && owner !== keyOf(svc)) {
          errors.push(
            fieldInvalid(
              'spec.clusterIPs',
              [ip],
              `failed to allocate IP ${ip}: provided IP is already allocated`,
            ),
          );
        }
      }
    }
    if (clusterIPsOf(svc).length === 0 && type !== undefined) {
      errors.push(
        fieldInvalid(
          'spec.clusterIPs',
          [],
          `failed to allocate a ClusterIP: the range ${allocator.cidr.text} is full`,
        ),
      );
    }
  }
  if (spec.selector !== undefined) errors.push(...validateLabels(spec.selector, 'spec.selector'));
  return errors;
}

export function makeServices(allocator: ServiceAllocator): ResourceType {
  return {
    group: '',
    version: 'v1',
    kind: 'Service',
    listKind: 'ServiceList',
    plural: 'services',
    singular: 'service',
    namespaced: true,
    shortNames: ['svc'],
    categories: ['all'],
    verbs: allVerbs,
    subresources: [{ name: 'status', kind: 'Service', verbs: ['get', 'patch', 'update'] }],
    model: 'V1Service',
    storage: 'services',
    statusSubresource: true,
    returnDeletedObject: true,
    columns: [
      nameColumn,
      {
        name: 'Type',
        type: 'string',
        description: 'type determines how the Service is exposed.',
        priority: 0,
      },
      {
        name: 'Cluster-IP',
        type: 'string',
        description: 'clusterIP is the IP address of the service.',
        priority: 0,
      },
      {
        name: 'External-IP',
        type: 'string',
        description:
          'externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.',
        priority: 0,
      },
      {
        name: 'Port(s)',
        type: 'string',
        description: 'The list of ports that are exposed by this service.',
        priority: 0,
      },
      ageColumn,
      {
        name: 'Selector',
        type: 'string',
        description: 'Route service traffic to pods with label keys and values matching this selector.',
        priority: 1,
      },
    ],
    row(obj, now) {
      const spec = obj.spec ?? {};
      const type = spec.type ?? 'ClusterIP';
      let external = '<none>';
      const ingress = (obj.status?.loadBalancer?.ingress ?? [])
        .map((i: any) => i.ip || i.hostname)
        .filter(Boolean);
      if (type === 'ExternalName') external = spec.externalName ?? '<none>';
      else if (type === 'LoadBalancer') {
        const all = [...ingress, ...(spec.externalIPs ?? [])];
        external = all.length ? all.join(',') : '<pending>';
      } else if ((spec.externalIPs ?? []).length) external = spec.externalIPs.join(',');
      const portText =
        ports(obj)
          .map((p) => `${p.port}${p.nodePort ? `:${p.nodePort}` : ''}/${p.protocol ?? 'TCP'}`)
          .join(',') || '<none>';
      const selector = Object.entries(spec.selector ?? {})
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([k, v]) => `${k}=${v}`)
        .join(',');
      return [
        obj.metadata.name,
        type,
        type === 'ExternalName' ? '<none>' : spec.clusterIP || '<none>',
        external,
        portText,
        age(obj, now),
        selector || '<none>',
      ];
    },
    fields: {},
    strategy: {
      prepareForCreate(obj) {
        applyServiceDefaults(obj);
        allocate(obj, allocator);
        obj.status = { loadBalancer: {} };
      },
      validate: (obj) => validateService(obj, allocator),
      prepareForUpdate(obj, old) {
        obj.status = old.status;
        if (!isObject(obj.spec)) return;
        // What the client left out but the server allocated is kept (kubectl replace, a PUT without clusterIP).
        if (
          (obj.spec.clusterIP === undefined || obj.spec.clusterIP === '') &&
          obj.spec.type !== 'ExternalName'
        ) {
          obj.spec.clusterIP = old.spec?.clusterIP;
          obj.spec.clusterIPs = old.spec?.clusterIPs;
        }
        applyServiceDefaults(obj);
        if (usesNodePorts(obj)) {
          for (const p of ports(obj)) {
            if (p.nodePort === undefined || p.nodePort === 0) {
              const same = ports(old).find((o) => o.port === p.port && (o.protocol ?? 'TCP') === p.protocol);
              if (same?.nodePort) p.nodePort = same.nodePort;
            }
          }
        } else if (usesNodePorts(old)) {
          for (const p of ports(obj)) {
            const same = ports(old).find((o) => o.port === p.port);
            if (same?.nodePort === p.nodePort) delete p.nodePort;
          }
        }
        allocate(obj, allocator);
      },
      validateUpdate(obj, old) {
        const errors = [
          ...validateObjectMetaUpdate(obj.metadata, old.metadata),
          ...validateService(obj, allocator),
        ];
        const before = clusterIPsOf(old);
        const after = clusterIPsOf(obj);
        if (
          before.length > 0 &&
          obj.spec?.type !== 'ExternalName' &&
          old.spec?.type !== 'ExternalName' &&
          before[0] !== after[0]
        ) {
          errors.push(fieldInvalid('spec.clusterIPs[0]', after, 'may not change once set'));
        }
        return errors;
      },
    },
  };
}
