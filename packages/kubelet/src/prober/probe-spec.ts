import type { Container, Probe } from '@nodelet/api';
import type { ProbeType } from './probe-handler.js';

/**
 * A probe's parameters with upstream's defaults. As in Go, where an unset number is 0 and the API server
 * defaults a 0, a missing or 0 `periodSeconds`, `timeoutSeconds`, `successThreshold` or
 * `failureThreshold` takes its default; `initialDelaySeconds` defaults to 0.
 */
export interface ProbeTiming {
  initialDelayMs: number;
  periodMs: number;
  timeoutMs: number;
  successThreshold: number;
  failureThreshold: number;
}

export const PROBE_DEFAULTS = {
  initialDelaySeconds: 0,
  periodSeconds: 10,
  timeoutSeconds: 1,
  successThreshold: 1,
  failureThreshold: 3,
} as const;

const positive = (value: number | undefined, fallback: number): number =>
  typeof value === 'number' && value > 0 ? value : fallback;

export function probeTiming(probe: Probe): ProbeTiming {
  return {
    initialDelayMs: Math.max(0, probe.initialDelaySeconds ?? 0) * 1000,
    periodMs: positive(probe.periodSeconds, PROBE_DEFAULTS.periodSeconds) * 1000,
    timeoutMs: positive(probe.timeoutSeconds, PROBE_DEFAULTS.timeoutSeconds) * 1000,
    successThreshold: positive(probe.successThreshold, PROBE_DEFAULTS.successThreshold),
    failureThreshold: positive(probe.failureThreshold, PROBE_DEFAULTS.failureThreshold),
  };
}

/** The container's probe of a type, if it has one. */
export function probeOf(container: Container, type: ProbeType): Probe | undefined {
  switch (type) {
    case 'liveness':
      return container.livenessProbe ?? undefined;
    case 'readiness':
      return container.readinessProbe ?? undefined;
    case 'startup':
      return container.startupProbe ?? undefined;
  }
}

export const PROBE_TYPES: readonly ProbeType[] = ['startup', 'liveness', 'readiness'];

/** `Liveness`, `Readiness`, `Startup`: how events and log lines name a probe type (upstream's String()). */
export const probeTypeTitle = (type: ProbeType): string => type[0]!.toUpperCase() + type.slice(1);

/** A port of the container: a number, or the name of one of its `ports` (upstream ResolveContainerPort). */
export function resolveContainerPort(port: number | string | undefined, container: Container): number {
  let resolved: number;
  if (typeof port === 'number') resolved = port;
  else if (typeof port === 'string') {
    const named = (container.ports ?? []).find((p) => p.name === port);
    if (named) resolved = named.containerPort;
    else if (/^\d+$/.test(port))
      resolved = Number(port); // a number written as a string
    else throw new Error(`port "${port}" not found in the ports of container "${container.name}"`);
  } else {
    throw new Error(`container "${container.name}": the probe has no port`);
  }
  if (!Number.isInteger(resolved) || resolved < 1 || resolved > 65535) {
    throw new Error(`invalid port number: ${resolved}`);
  }
  return resolved;
}

/** `host:port`, with brackets around an IPv6 address (Go's net.JoinHostPort). */
export const joinHostPort = (host: string, port: number): string =>
  host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;

/** Go's `%v` of a time.Duration of whole seconds or ms: `1s`, `500ms`, `1m30s`. */
export function goDuration(ms: number): string {
  if (ms < 1000) return `${ms}ms`;
  const s = ms / 1000;
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${s - m * 60}s`;
  const h = Math.floor(m / 60);
  return `${h}h${m - h * 60}m${s - m * 60}s`;
}

/** Output read from a check is bounded, as upstream (10 KiB). */
export const MAX_PROBE_OUTPUT_BYTES = 10 * 1024;
