import type { EndpointSlice } from './objects.js';
import type { Protocol } from './service-port.js';

/**
 * One endpoint of one service port (upstream `BaseEndpointInfo`). `endpoint` is `ip:port`, the string
 * chain names are hashed from.
 */
export interface EndpointInfo {
  readonly ip: string;
  readonly port: number;
  readonly endpoint: string;
  /** Ready: serving and not terminating. Only ready endpoints get traffic while any exists. */
  readonly ready: boolean;
  readonly serving: boolean;
  readonly terminating: boolean;
  /** On this node (`nodeName` equals the proxy's node name). */
  readonly isLocal: boolean;
  readonly nodeName?: string;
  readonly zone?: string;
  /** Zones this endpoint is hinted for (topology-aware routing); undefined when it carries no hints. */
  readonly zoneHints?: readonly string[];
}

/** Endpoints of one Service, by port name and protocol: `portName/protocol` → endpoints. */
export type ServiceEndpoints = ReadonlyMap<string, readonly EndpointInfo[]>;

export const endpointPortKey = (portName: string, protocol: Protocol) => `${portName}/${protocol}`;

/**
 * Merges the EndpointSlices of one Service into endpoints per service port (upstream
 * `EndpointSliceCache`). An endpoint that appears in several slices is kept once, the ready copy
 * preferred; endpoints are sorted by `ip:port` so rules come out the same for the same input.
 */
export function mergeSlices(slices: Iterable<EndpointSlice>, nodeName: string): ServiceEndpoints {
  const byPort = new Map<string, Map<string, EndpointInfo>>();
  for (const slice of slices) {
    if (slice.addressType !== 'IPv4') continue;
    for (const port of slice.ports ?? []) {
      if (port.port === undefined || port.port === null) continue;
      const key = endpointPortKey(port.name ?? '', (port.protocol ?? 'TCP') as Protocol);
      let set = byPort.get(key);
      if (!set) byPort.set(key, (set = new Map()));
      for (const ep of slice.endpoints ?? []) {
        const ip = ep.addresses?.[0];
        if (!ip) continue;
        const c = ep.conditions ?? {};
        // As upstream: an unset `ready` means ready; an unset `serving` follows `ready`.
        const ready = c.ready ?? true;
        const serving = c.serving ?? ready;
        const terminating = c.terminating ?? false;
        const info: EndpointInfo = {
          ip,
          port: port.port,
          endpoint: `${ip}:${port.port}`,
          ready: ready && !terminating,
          serving,
          terminating,
          isLocal: !!ep.nodeName && ep.nodeName === nodeName,
          ...(ep.nodeName ? { nodeName: ep.nodeName } : {}),
          ...(ep.zone ? { zone: ep.zone } : {}),
          ...(ep.hints?.forZones
            ? { zoneHints: ep.hints.forZones.map((z) => z.name ?? '').filter(Boolean) }
            : {}),
        };
        const existing = set.get(info.endpoint);
        if (!existing || (!existing.ready && info.ready)) set.set(info.endpoint, info);
      }
    }
  }
  const out = new Map<string, EndpointInfo[]>();
  for (const [key, set] of byPort) {
    out.set(
      key,
      [...set.values()].sort((a, b) => (a.endpoint < b.endpoint ? -1 : a.endpoint > b.endpoint ? 1 : 0)),
    );
  }
  return out;
}
