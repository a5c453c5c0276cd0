import type { Service } from '@nodelet/api';

/**
 * Service environment variables (upstream pkg/kubelet/envvars and getServiceEnvVarMap): every pod gets
 * the `kubernetes` Service of `default`, and with `enableServiceLinks` (the default) every Service of its
 * own namespace, as `<NAME>_SERVICE_HOST`, `<NAME>_SERVICE_PORT`, `<NAME>_SERVICE_PORT_<PORT NAME>` and
 * Docker's link variables (`<NAME>_PORT`, `<NAME>_PORT_<port>_<PROTO>[_PROTO|_PORT|_ADDR]`). Services
 * without a cluster IP (headless, ExternalName) give none.
 */
export function serviceEnvMap(
  services: readonly Service[],
  namespace: string,
  enableServiceLinks: boolean,
): Map<string, string> {
  const chosen = new Map<string, Service>();
  for (const s of services) {
    if (!hasClusterIP(s)) continue;
    const name = s.metadata?.name ?? '';
    const ns = s.metadata?.namespace ?? 'default';
    // The master Service of `default` always; a Service of the pod's namespace replaces it (by name).
    if (ns === 'default' && name === 'kubernetes') {
      if (!chosen.has(name)) chosen.set(name, s);
    } else if (ns === namespace && enableServiceLinks) {
      chosen.set(name, s);
    }
  }
  const sorted = [...chosen.values()].sort((a, b) => (a.metadata!.name! < b.metadata!.name! ? -1 : 1));
  return new Map(serviceEnvVars(sorted));
}

/** The variables of each Service, in upstream's order (FromServices). */
export function serviceEnvVars(services: readonly Service[]): [string, string][] {
  const out: [string, string][] = [];
  for (const s of services) {
    const ports = s.spec?.ports ?? [];
    if (!hasClusterIP(s) || ports.length === 0) continue;
    const ip = s.spec!.clusterIP!;
    const prefix = envName(s.metadata?.name ?? '');
    out.push([`${prefix}_SERVICE_HOST`, ip]);
    out.push([`${prefix}_SERVICE_PORT`, String(ports[0]!.port)]);
    for (const p of ports)
      if (p.name) out.push([`${prefix}_SERVICE_PORT_${envName(p.name)}`, String(p.port)]);
    ports.forEach((p, i) => {
      const protocol = (p.protocol || 'TCP').toLowerCase();
      const url = `${protocol}://${joinHostPort(ip, p.port)}`;
      if (i === 0) out.push([`${prefix}_PORT`, url]);
      const portPrefix = `${prefix}_PORT_${p.port}_${protocol.toUpperCase()}`;
      out.push([portPrefix, url]);
      out.push([`${portPrefix}_PROTO`, protocol]);
      out.push([`${portPrefix}_PORT`, String(p.port)]);
      out.push([`${portPrefix}_ADDR`, ip]);
    });
  }
  return out;
}

/** Upstream IsServiceIPSet. */
function hasClusterIP(s: Service): boolean {
  const ip = s.spec?.clusterIP;
  return !!ip && ip !== 'None';
}

const envName = (name: string) => name.replace(/-/g, '_').toUpperCase();

/** Go's net.JoinHostPort: an IPv6 address in brackets. */
const joinHostPort = (host: string, port: number) =>
  host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
