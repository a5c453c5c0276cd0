import { dns1123LabelErrors, type Pod } from '@nodelet/api';

/**
 * A pod's hostname and domain (upstream GeneratePodHostNameAndDomain, truncatePodHostnameIfNeeded,
 * GetNodenameForKernel): `spec.hostname` or the pod's name, cut to the kernel's 63 characters; with
 * `spec.subdomain` the domain `<subdomain>.<namespace>.svc.<clusterDomain>`; with `setHostnameAsFQDN`
 * the sandbox's hostname is the whole FQDN, which must fit the kernel's 64.
 */

/** The kernel's nodename holds 64 bytes with the terminating NUL. */
export const HOSTNAME_MAX_LENGTH = 63;
const FQDN_MAX_LENGTH = 64;

export interface PodHostname {
  /** The short hostname (/etc/hosts names it beside the FQDN). */
  hostname: string;
  /** `<subdomain>.<namespace>.svc.<clusterDomain>`, or '' without a subdomain. */
  domain: string;
}

/**
 * A hostname longer than 63 characters (a long pod name) cut to 63, without a trailing `-` or `.`
 * (which the kernel and resolvers refuse). Returns the hostname unchanged when it fits.
 */
export function truncatePodHostname(podName: string, hostname: string): string {
  if (hostname.length <= HOSTNAME_MAX_LENGTH) return hostname;
  const truncated = hostname.slice(0, HOSTNAME_MAX_LENGTH).replace(/[-.]+$/, '');
  if (truncated === '') throw new Error(`hostname for pod "${podName}" was invalid: "${hostname}"`);
  return truncated;
}

/** The pod's hostname and domain; an invalid `hostname` or `subdomain` is an error naming the field. */
export function podHostnameAndDomain(pod: Pod, clusterDomain: string): PodHostname {
  const name = pod.metadata?.name ?? '';
  let hostname = name;
  const wanted = pod.spec?.hostname ?? '';
  if (wanted !== '') {
    const errors = dns1123LabelErrors(wanted);
    if (errors.length > 0)
      throw new Error(`pod Hostname "${wanted}" is not a valid DNS label: ${errors.join(';')}`);
    hostname = wanted;
  }
  hostname = truncatePodHostname(name, hostname);
  let domain = '';
  const subdomain = pod.spec?.subdomain ?? '';
  if (subdomain !== '') {
    const errors = dns1123LabelErrors(subdomain);
    if (errors.length > 0)
      throw new Error(`pod Subdomain "${subdomain}" is not a valid DNS label: ${errors.join(';')}`);
    domain = `${subdomain}.${pod.metadata?.namespace ?? 'default'}.svc.${clusterDomain}`;
  }
  return { hostname, domain };
}

/** The hostname the sandbox is given: the FQDN with `setHostnameAsFQDN` and a domain, else the short name. */
export function kernelHostname(names: PodHostname, setHostnameAsFQDN: boolean | undefined): string {
  if (names.domain === '' || !setHostnameAsFQDN) return names.hostname;
  const fqdn = `${names.hostname}.${names.domain}`;
  if (fqdn.length > FQDN_MAX_LENGTH) {
    throw new Error(
      `failed to construct FQDN from pod hostname and cluster domain, FQDN ${fqdn} is too long (${FQDN_MAX_LENGTH} characters is the max, ${fqdn.length} characters requested)`,
    );
  }
  return fqdn;
}
