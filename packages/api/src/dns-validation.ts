import { isIP } from 'node:net';
import { type FieldError, fieldInvalid, fieldRequired } from './field-error.js';
import { dns1123LabelErrors, dns1123SubdomainErrors } from './validation.js';

/**
 * The pod's names and DNS fields as the API server validates them (pkg/apis/core/validation:
 * validatePodDNSConfig, ValidateHostAliases, and the DNS-label checks of `hostname` and `subdomain`).
 * `spec` is the raw spec object; errors are appended with the API server's wording.
 */

/** Upstream's limits (MaxDNSNameservers, MaxDNSSearchPaths, MaxDNSSearchListChars). */
const MAX_NAMESERVERS = 3;
const MAX_SEARCH_PATHS = 32;
const MAX_SEARCH_LIST_CHARS = 2048;
const IP_MESSAGE = 'must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((s) => typeof s === 'string') : []);

export function validatePodNames(spec: Obj, path: string, errors: FieldError[]): void {
  for (const field of ['hostname', 'subdomain'] as const) {
    const value = spec[field];
    if (typeof value !== 'string' || value === '') continue;
    for (const m of dns1123LabelErrors(value)) errors.push(fieldInvalid(`${path}.${field}`, value, m));
  }
  validateDnsConfig(spec.dnsConfig, spec.dnsPolicy, `${path}.dnsConfig`, errors);
  validateHostAliases(spec.hostAliases, `${path}.hostAliases`, errors);
}

function validateDnsConfig(raw: unknown, policy: unknown, path: string, errors: FieldError[]): void {
  if (policy === 'None') {
    if (!isObj(raw)) {
      errors.push(fieldRequired(path, 'must provide `dnsConfig` when `dnsPolicy` is None'));
      return;
    }
    if (strings(raw.nameservers).length === 0) {
      errors.push(
        fieldRequired(
          `${path}.nameservers`,
          'must provide at least one DNS nameserver when `dnsPolicy` is None',
        ),
      );
      return;
    }
  }
  if (!isObj(raw)) return;
  const nameservers = strings(raw.nameservers);
  if (nameservers.length > MAX_NAMESERVERS) {
    errors.push(
      fieldInvalid(
        `${path}.nameservers`,
        nameservers,
        `must not have more than ${MAX_NAMESERVERS} nameservers`,
      ),
    );
  }
  nameservers.forEach((ns, i) => {
    if (isIP(ns) === 0) errors.push(fieldInvalid(`${path}.nameservers[${i}]`, ns, IP_MESSAGE));
  });
  const searches = strings(raw.searches);
  if (searches.length > MAX_SEARCH_PATHS) {
    errors.push(
      fieldInvalid(`${path}.searches`, searches, `must not have more than ${MAX_SEARCH_PATHS} search paths`),
    );
  }
  if (searches.join(' ').length > MAX_SEARCH_LIST_CHARS) {
    errors.push(
      fieldInvalid(
        `${path}.searches`,
        searches,
        `must not have more than ${MAX_SEARCH_LIST_CHARS} characters (including spaces) in the search list`,
      ),
    );
  }
  searches.forEach((s, i) => {
    // A trailing dot (a fully qualified name) is fine.
    const search = s.endsWith('.') ? s.slice(0, -1) : s;
    for (const m of dns1123SubdomainErrors(search))
      errors.push(fieldInvalid(`${path}.searches[${i}]`, search, m));
  });
  (Array.isArray(raw.options) ? raw.options : []).forEach((op, i) => {
    const name = isObj(op) ? op.name : undefined;
    if (typeof name !== 'string' || name === '') {
      errors.push(fieldRequired(`${path}.options[${i}]`, 'Option.Name must not be empty'));
    }
  });
}

function validateHostAliases(raw: unknown, path: string, errors: FieldError[]): void {
  (Array.isArray(raw) ? raw : []).forEach((alias, i) => {
    if (!isObj(alias)) return;
    const ip = typeof alias.ip === 'string' ? alias.ip : '';
    if (isIP(ip) === 0) errors.push(fieldInvalid(`${path}[${i}].ip`, ip, IP_MESSAGE));
    strings(alias.hostnames).forEach((h, j) => {
      for (const m of dns1123SubdomainErrors(h))
        errors.push(fieldInvalid(`${path}[${i}].hostnames[${j}]`, h, m));
    });
  });
}
