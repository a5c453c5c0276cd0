import { isIPv4, isIPv6 } from 'node:net';
import {
  type FieldError,
  fieldDuplicate,
  fieldInvalid,
  fieldNotSupported,
  fieldRequired,
} from '@nodelet/api/field-error';
import { type EndpointSlice, SERVICE_NAME_LABEL, type Service } from './objects.js';

/**
 * Checks the fields of Services and EndpointSlices that the proxy turns into rules. The API server
 * validates far more; these are the fields that, if wrong, would produce a broken rule (a port out of
 * range, an address that is not an IP) — so the proxy refuses the object instead and keeps the last good
 * version. Messages are worded as the API server words them (`spec.ports[0].port: Invalid value: …`).
 */
export const PROTOCOLS = ['TCP', 'UDP', 'SCTP'] as const;
const SERVICE_TYPES = ['ClusterIP', 'NodePort', 'LoadBalancer', 'ExternalName'];
const POLICIES = ['Cluster', 'Local'];
const AFFINITIES = ['None', 'ClientIP'];
const ADDRESS_TYPES = ['IPv4', 'IPv6', 'FQDN'];
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

const isPort = (v: unknown): v is number =>
  Number.isInteger(v) && (v as number) >= 1 && (v as number) <= 65535;
const portDetail = 'must be between 1 and 65535, inclusive';

export function isIP(value: unknown): value is string {
  return typeof value === 'string' && (isIPv4(value) || isIPv6(value));
}

/** `a.b.c.d/n` (IPv4) or an IPv6 CIDR. */
export function isCIDR(value: unknown): value is string {
  if (typeof value !== 'string') return false;
  const [ip, bits, extra] = value.split('/');
  if (extra !== undefined || bits === undefined || !/^\d{1,3}$/.test(bits)) return false;
  if (isIPv4(ip!)) return Number(bits) <= 32;
  if (isIPv6(ip!)) return Number(bits) <= 128;
  return false;
}

function validateMeta(obj: { metadata?: { name?: unknown; namespace?: unknown } }, errors: FieldError[]) {
  const name = obj.metadata?.name;
  if (typeof name !== 'string' || name === '') errors.push(fieldRequired('metadata.name'));
  const ns = obj.metadata?.namespace;
  if (ns !== undefined && (typeof ns !== 'string' || !DNS_LABEL.test(ns))) {
    errors.push(fieldInvalid('metadata.namespace', ns, 'must be a DNS label'));
  }
}

/** Whether a Service is proxied at all: headless (`clusterIP: None`) and ExternalName services are not. */
export function isProxiedService(svc: Service): boolean {
  const ip = svc.spec?.clusterIP;
  return svc.spec?.type !== 'ExternalName' && !!ip && ip !== 'None';
}

export function validateService(svc: Service): FieldError[] {
  const errors: FieldError[] = [];
  validateMeta(svc, errors);
  const spec = svc.spec;
  if (!spec || typeof spec !== 'object') {
    errors.push(fieldRequired('spec'));
    return errors;
  }
  if (spec.type !== undefined && !SERVICE_TYPES.includes(spec.type)) {
    errors.push(fieldNotSupported('spec.type', spec.type, SERVICE_TYPES));
  }
  if (spec.type === 'ExternalName') return errors;
  const ip = spec.clusterIP;
  if (ip !== undefined && ip !== '' && ip !== 'None' && !isIP(ip)) {
    errors.push(fieldInvalid('spec.clusterIP', ip, 'must be a valid IP address, "None" or empty'));
  }
  const ports = spec.ports;
  if (ports !== undefined && !Array.isArray(ports)) {
    errors.push(fieldInvalid('spec.ports', ports, 'must be a list'));
  } else if (ports) {
    const names = new Set<string>();
    ports.forEach((p, i) => {
      const f = `spec.ports[${i}]`;
      if (!p || typeof p !== 'object') {
        errors.push(fieldInvalid(f, p, 'must be an object'));
        return;
      }
      if (p.port === undefined) errors.push(fieldRequired(`${f}.port`));
      else if (!isPort(p.port)) errors.push(fieldInvalid(`${f}.port`, p.port, portDetail));
      if (p.protocol !== undefined && !(PROTOCOLS as readonly string[]).includes(p.protocol)) {
        errors.push(fieldNotSupported(`${f}.protocol`, p.protocol, PROTOCOLS));
      }
      if (p.nodePort !== undefined && p.nodePort !== 0 && !isPort(p.nodePort)) {
        errors.push(fieldInvalid(`${f}.nodePort`, p.nodePort, portDetail));
      }
      if (ports.length > 1 && !p.name)
        errors.push(fieldRequired(`${f}.name`, 'when there is more than one port'));
      if (p.name) {
        if (names.has(p.name)) errors.push(fieldDuplicate(`${f}.name`, p.name));
        names.add(p.name);
      }
    });
  }
  (spec.externalIPs ?? []).forEach((e, i) => {
    if (!isIP(e)) errors.push(fieldInvalid(`spec.externalIPs[${i}]`, e, 'must be a valid IP address'));
  });
  (spec.loadBalancerSourceRanges ?? []).forEach((c, i) => {
    if (!isCIDR(c.trim())) {
      errors.push(fieldInvalid(`spec.loadBalancerSourceRanges[${i}]`, c, 'must be a CIDR, e.g. 10.0.0.0/8'));
    }
  });
  if (spec.sessionAffinity !== undefined && !AFFINITIES.includes(spec.sessionAffinity)) {
    errors.push(fieldNotSupported('spec.sessionAffinity', spec.sessionAffinity, AFFINITIES));
  }
  const timeout = spec.sessionAffinityConfig?.clientIP?.timeoutSeconds;
  if (timeout !== undefined && (!Number.isInteger(timeout) || timeout < 1 || timeout > 86400)) {
    errors.push(
      fieldInvalid(
        'spec.sessionAffinityConfig.clientIP.timeoutSeconds',
        timeout,
        'must be between 1 and 86400, inclusive',
      ),
    );
  }
  for (const field of ['externalTrafficPolicy', 'internalTrafficPolicy'] as const) {
    const v = spec[field];
    if (v !== undefined && v !== '' && !POLICIES.includes(v)) {
      errors.push(fieldNotSupported(`spec.${field}`, v, POLICIES));
    }
  }
  if (
    spec.healthCheckNodePort !== undefined &&
    spec.healthCheckNodePort !== 0 &&
    !isPort(spec.healthCheckNodePort)
  ) {
    errors.push(fieldInvalid('spec.healthCheckNodePort', spec.healthCheckNodePort, portDetail));
  }
  (svc.status?.loadBalancer?.ingress ?? []).forEach((ing, i) => {
    if (ing.ip !== undefined && !isIP(ing.ip)) {
      errors.push(fieldInvalid(`status.loadBalancer.ingress[${i}].ip`, ing.ip, 'must be a valid IP address'));
    }
  });
  return errors;
}

export function validateEndpointSlice(slice: EndpointSlice): FieldError[] {
  const errors: FieldError[] = [];
  validateMeta(slice, errors);
  if (!slice.metadata?.labels?.[SERVICE_NAME_LABEL]) {
    errors.push(fieldRequired(`metadata.labels[${SERVICE_NAME_LABEL}]`, 'the name of the Service'));
  }
  const type = slice.addressType;
  if (type === undefined) errors.push(fieldRequired('addressType'));
  else if (!ADDRESS_TYPES.includes(type)) errors.push(fieldNotSupported('addressType', type, ADDRESS_TYPES));
  if (slice.endpoints !== undefined && !Array.isArray(slice.endpoints)) {
    errors.push(fieldInvalid('endpoints', slice.endpoints, 'must be a list'));
  } else {
    (slice.endpoints ?? []).forEach((ep, i) => {
      const f = `endpoints[${i}]`;
      if (!ep || typeof ep !== 'object') {
        errors.push(fieldInvalid(f, ep, 'must be an object'));
        return;
      }
      if (!Array.isArray(ep.addresses) || ep.addresses.length === 0) {
        errors.push(fieldRequired(`${f}.addresses`));
        return;
      }
      ep.addresses.forEach((a, j) => {
        const ok =
          type === 'IPv4'
            ? typeof a === 'string' && isIPv4(a)
            : type === 'IPv6'
              ? typeof a === 'string' && isIPv6(a)
              : typeof a === 'string' && a !== '';
        if (!ok) {
          errors.push(
            fieldInvalid(
              `${f}.addresses[${j}]`,
              a,
              type === 'FQDN' ? 'must be a host name' : `must be a valid ${type} address`,
            ),
          );
        }
      });
    });
  }
  if (slice.ports !== undefined && !Array.isArray(slice.ports)) {
    errors.push(fieldInvalid('ports', slice.ports, 'must be a list'));
  } else {
    (slice.ports ?? []).forEach((p, i) => {
      const f = `ports[${i}]`;
      if (!p || typeof p !== 'object') {
        errors.push(fieldInvalid(f, p, 'must be an object'));
        return;
      }
      if (p.port !== undefined && p.port !== null && !isPort(p.port))
        errors.push(fieldInvalid(`${f}.port`, p.port, portDetail));
      if (p.protocol !== undefined && !(PROTOCOLS as readonly string[]).includes(p.protocol)) {
        errors.push(fieldNotSupported(`${f}.protocol`, p.protocol, PROTOCOLS));
      }
    });
  }
  return errors;
}
