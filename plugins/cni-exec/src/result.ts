import { isIP } from 'node:net';
import type { CniDns, CniInterface, CniIpConfig, CniResult, CniRoute, PodNetworkStatus } from '@nodelet/cni';
import { atLeast, isVersion } from './version.js';

/**
 * Reads a plugin's ADD result into the 1.x shape. Results of 0.3.0–0.4.0 (an extra `version` per IP)
 * and 1.x are the same apart from that; 0.1.0/0.2.0 results (`ip4`, `ip6`) are converted. Throws an
 * Error saying what is wrong; the caller names the plugin.
 */
export function parseResult(raw: unknown, expectedVersion: string): CniResult {
  if (!isObject(raw)) throw new Error('the result is not a JSON object');
  const cniVersion = raw.cniVersion === undefined || raw.cniVersion === '' ? expectedVersion : raw.cniVersion;
  if (!isVersion(cniVersion))
    throw new Error(`the result has an invalid cniVersion ${JSON.stringify(cniVersion)}`);
  return atLeast(cniVersion, '0.3.0') ? parseCurrent(raw, cniVersion) : parseLegacy(raw, cniVersion);
}

function parseCurrent(raw: Record<string, unknown>, cniVersion: string): CniResult {
  const interfaces = list(raw.interfaces, 'interfaces').map((v, i): CniInterface => {
    const where = `interfaces[${i}]`;
    if (!isObject(v) || typeof v.name !== 'string') throw new Error(`${where} has no name`);
    return compact({
      name: v.name,
      mac: str(v.mac, `${where}.mac`),
      mtu: num(v.mtu, `${where}.mtu`),
      sandbox: str(v.sandbox, `${where}.sandbox`),
      socketPath: str(v.socketPath, `${where}.socketPath`),
      pciID: str(v.pciID, `${where}.pciID`),
    });
  });
  const ips = list(raw.ips, 'ips').map((v, i): CniIpConfig => {
    const where = `ips[${i}]`;
    if (!isObject(v)) throw new Error(`${where} is not an object`);
    const index = num(v.interface, `${where}.interface`);
    if (index !== undefined && (!Number.isInteger(index) || index < 0 || index >= interfaces.length)) {
      throw new Error(
        `${where}.interface is ${index}, but the result lists ${interfaces.length} interface(s)`,
      );
    }
    return compact({
      address: cidr(v.address, `${where}.address`),
      gateway: ip(v.gateway, `${where}.gateway`),
      interface: index,
    });
  });
  return { cniVersion, interfaces, ips, routes: routes(raw.routes, 'routes'), dns: dns(raw.dns) };
}

function parseLegacy(raw: Record<string, unknown>, cniVersion: string): CniResult {
  const ips: CniIpConfig[] = [];
  const allRoutes: CniRoute[] = [];
  for (const key of ['ip4', 'ip6'] as const) {
    const v = raw[key];
    if (v === undefined || v === null) continue;
    if (!isObject(v)) throw new Error(`${key} is not an object`);
    ips.push(compact({ address: cidr(v.ip, `${key}.ip`), gateway: ip(v.gateway, `${key}.gateway`) }));
    allRoutes.push(...routes(v.routes, `${key}.routes`));
  }
  return { cniVersion, interfaces: [], ips, routes: allRoutes, dns: dns(raw.dns) };
}

function routes(value: unknown, where: string): CniRoute[] {
  return list(value, where).map((v, i) => {
    const at = `${where}[${i}]`;
    if (!isObject(v)) throw new Error(`${at} is not an object`);
    return compact({
      dst: cidr(v.dst, `${at}.dst`),
      gw: ip(v.gw, `${at}.gw`),
      mtu: num(v.mtu, `${at}.mtu`),
      advmss: num(v.advmss, `${at}.advmss`),
      priority: num(v.priority, `${at}.priority`),
      table: num(v.table, `${at}.table`),
      scope: num(v.scope, `${at}.scope`),
    });
  });
}

function dns(value: unknown): CniDns {
  if (value === undefined || value === null) return {};
  if (!isObject(value)) throw new Error('dns is not an object');
  const strings = (v: unknown, where: string) => {
    if (v === undefined || v === null) return undefined;
    if (!Array.isArray(v) || !v.every((s) => typeof s === 'string'))
      throw new Error(`${where} is not a list of strings`);
    return v as string[];
  };
  return compact({
    nameservers: strings(value.nameservers, 'dns.nameservers'),
    domain: str(value.domain, 'dns.domain'),
    search: strings(value.search, 'dns.search'),
    options: strings(value.options, 'dns.options'),
  });
}

/**
 * The pod's view of a result: the addresses on `ifName` inside the netns (an address with no interface
 * index belongs to it too, as containerd reads it), IPv4 first — the kubelet's podIP is `ips[0]`.
 */
export function toPodNetworkStatus(network: string, result: CniResult, ifName: string): PodNetworkStatus {
  const podInterfaces = new Set(
    result.interfaces.flatMap((intf, i) => (intf.name === ifName && intf.sandbox ? [i] : [])),
  );
  const mine = result.ips.filter((c) => c.interface === undefined || podInterfaces.has(c.interface));
  const ordered = [
    ...mine.filter((c) => isIP(stripPrefix(c.address)) === 4),
    ...mine.filter((c) => isIP(stripPrefix(c.address)) === 6),
  ];
  const gateway = ordered[0]?.gateway;
  return {
    network,
    ips: ordered.map((c) => stripPrefix(c.address)),
    interfaces: result.interfaces,
    ...(gateway ? { gateway } : {}),
    routes: result.routes,
    dns: result.dns,
    result,
  };
}

export const stripPrefix = (address: string) => address.replace(/\/\d+$/, '');

function cidr(v: unknown, where: string): string {
  if (typeof v !== 'string') throw new Error(`${where} is missing`);
  const m = /^(.+)\/(\d{1,3})$/.exec(v);
  const family = m ? isIP(m[1]!) : 0;
  if (!m || family === 0 || Number(m[2]) > (family === 4 ? 32 : 128)) {
    throw new Error(`${where} ${JSON.stringify(v)} is not an address in CIDR notation`);
  }
  return v;
}

function ip(v: unknown, where: string): string | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v !== 'string' || isIP(v) === 0)
    throw new Error(`${where} ${JSON.stringify(v)} is not an IP address`);
  return v;
}

function str(v: unknown, where: string): string | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v !== 'string') throw new Error(`${where} is not a string`);
  return v;
}

function num(v: unknown, where: string): number | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new Error(`${where} is not a number`);
  return v;
}

function list(v: unknown, where: string): unknown[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw new Error(`${where} is not a list`);
  return v;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Drops undefined fields, so results compare and print cleanly. */
function compact<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}
