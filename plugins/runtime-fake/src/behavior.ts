import type { ProbeType } from '@nodelet/cri';
import { milliCpu, quantityValue } from '@nodelet/api';
import { invalidInput } from '@nodelet/kernel';

/**
 * How a fake container behaves. Scripted per container by a pod annotation
 * (`runtime-fake.nodelet.dev/<container-name>` or `runtime-fake.nodelet.dev/all`, value e.g.
 * `exitAfter=5s,exitCode=1`, or `cpu=250m,memory=100Mi,memoryGrowth=10Mi` for simulated usage) or by `FakeRuntime.script(...)`. A container without a behaviour starts
 * at once, runs until it is stopped, and exits 143 on SIGTERM.
 */
export interface ContainerBehavior {
  /** StartContainer takes this long (on the clock) before the process runs. */
  startDelayMs?: number;
  /** The process exits by itself this long after it started. */
  exitAfterMs?: number;
  /** Exit code of that exit; 0 unless crashLoop (1) or oom (137). */
  exitCode?: number;
  /** Exit by itself with 1 after 1 s (unless exitAfter/exitCode say otherwise): CrashLoopBackOff. */
  crashLoop?: boolean;
  /** The exit is an OOM kill: code 137, reason OOMKilled; after 1 s unless exitAfter says otherwise. */
  oom?: boolean;
  /** SIGTERM is ignored: StopContainer kills the container (137) when the grace period ends. */
  ignoreStop?: boolean;
  /** After SIGTERM the process takes this long to shut down (killed with 137 if the grace period is shorter). */
  stopDelayMs?: number;
  /** Exit code after a handled SIGTERM (default 143, 128+SIGTERM). */
  stopExitCode?: number;
  /** CreateContainer fails with this message. */
  failCreate?: string;
  /** StartContainer fails with this message; the container is left EXITED, 128, reason StartError. */
  failStart?: string;
  /** Written to the container's stdout when it starts. */
  stdout?: string;
  /** Written to the container's stderr when it starts. */
  stderr?: string;
  /**
   * Written, as the process exits, to the host file mounted at the container's termination-message path
   * (its `io.kubernetes.container.terminationMessagePath` annotation, default /dev/termination-log).
   */
  terminationMessage?: string;
  // Probes (httpGet, tcpSocket, grpc; answered by the runtime, see probes.ts):
  /** Every probe of the container fails (HTTP 500, connection refused, NOT_SERVING). */
  probeFail?: boolean;
  /** Only the container's liveness probe fails. */
  livenessFail?: boolean;
  /** Only the container's readiness probe fails. */
  readinessFail?: boolean;
  /** Only the container's startup probe fails. */
  startupFail?: boolean;
  /** The first N probes of each type succeed, every later one fails (counted per container). */
  probeFailAfter?: number;
  /** A failing probe times out (after its timeoutSeconds, on the clock); alone: every probe times out. */
  probeTimeout?: boolean;
  // Simulated resource usage (stats-api.ts), so that eviction and `kubectl top` can be tested:
  /** CPU the running process uses, in millicores (`cpu=250m`); cumulative usage advances on the clock. */
  cpuMillicores?: number;
  /** Memory working set of the running process, in bytes (`memory=100Mi`). */
  memoryBytes?: number;
  /** Bytes the container wrote to its writable layer (`disk=1Gi`). */
  diskBytes?: number;
  /** Memory the running process adds every second of the clock (`memoryGrowth=50Mi`): a leak. */
  memoryGrowthBytes?: number;
  /** Bytes the running process adds to its writable layer every second (`diskGrowth=10Mi`). */
  diskGrowthBytes?: number;
}

/** Annotation key prefix; the rest of the key is a container name or `all`. */
export const BEHAVIOR_ANNOTATION_PREFIX = 'runtime-fake.nodelet.dev/';
/** The annotation name suffix that applies to every container of the pod. */
export const ALL_CONTAINERS = 'all';

type Kind = 'duration' | 'code' | 'bool' | 'text' | 'count' | 'cpu' | 'bytes';
const FIELDS: Record<string, { field: keyof ContainerBehavior; kind: Kind }> = {
  startDelay: { field: 'startDelayMs', kind: 'duration' },
  exitAfter: { field: 'exitAfterMs', kind: 'duration' },
  exitCode: { field: 'exitCode', kind: 'code' },
  crashLoop: { field: 'crashLoop', kind: 'bool' },
  oom: { field: 'oom', kind: 'bool' },
  ignoreStop: { field: 'ignoreStop', kind: 'bool' },
  stopDelay: { field: 'stopDelayMs', kind: 'duration' },
  stopExitCode: { field: 'stopExitCode', kind: 'code' },
  failCreate: { field: 'failCreate', kind: 'text' },
  failStart: { field: 'failStart', kind: 'text' },
  stdout: { field: 'stdout', kind: 'text' },
  stderr: { field: 'stderr', kind: 'text' },
  terminationMessage: { field: 'terminationMessage', kind: 'text' },
  probeFail: { field: 'probeFail', kind: 'bool' },
  livenessFail: { field: 'livenessFail', kind: 'bool' },
  readinessFail: { field: 'readinessFail', kind: 'bool' },
  startupFail: { field: 'startupFail', kind: 'bool' },
  probeFailAfter: { field: 'probeFailAfter', kind: 'count' },
  probeTimeout: { field: 'probeTimeout', kind: 'bool' },
  cpu: { field: 'cpuMillicores', kind: 'cpu' },
  memory: { field: 'memoryBytes', kind: 'bytes' },
  disk: { field: 'diskBytes', kind: 'bytes' },
  memoryGrowth: { field: 'memoryGrowthBytes', kind: 'bytes' },
  diskGrowth: { field: 'diskGrowthBytes', kind: 'bytes' },
};

/** The behaviour fields that script probes (the rest script the process). */
export const PROBE_FIELDS: readonly (keyof ContainerBehavior)[] = [
  'probeFail',
  'livenessFail',
  'readinessFail',
  'startupFail',
  'probeFailAfter',
  'probeTimeout',
];

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** `5s`, `1m30s`, `250ms`, `1.5s`, `0`; a bare number is seconds. */
export function parseDuration(text: string): number | undefined {
  if (/^\d+(?:\.\d+)?$/.test(text)) return Number(text) * 1000;
  if (!/^(?:\d+(?:\.\d+)?(?:ms|s|m|h))+$/.test(text)) return undefined;
  let ms = 0;
  for (const m of text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)) ms += Number(m[1]) * UNIT_MS[m[2]!]!;
  return Math.round(ms);
}

/** Splits `a=1,b="x, y",c` at commas outside double quotes; `\"`, `\\` and `\n` escape inside quotes. */
function splitPairs(text: string): Array<[key: string, value: string | undefined]> {
  const pairs: Array<[string, string | undefined]> = [];
  let i = 0;
  while (i < text.length) {
    let key = '';
    while (i < text.length && text[i] !== '=' && text[i] !== ',') key += text[i++];
    let value: string | undefined;
    if (text[i] === '=') {
      i++;
      value = '';
      if (text[i] === '"') {
        i++;
        for (;;) {
          if (i >= text.length) throw invalidInput(`unterminated quoted value for "${key.trim()}"`);
          const ch = text[i++]!;
          if (ch === '"') break;
          if (ch === '\\' && i < text.length) {
            const next = text[i++]!;
            value += next === 'n' ? '\n' : next === 't' ? '\t' : next;
          } else value += ch;
        }
        while (i < text.length && text[i] !== ',') {
          if (text[i] !== ' ')
            throw invalidInput(`unexpected text after the quoted value of "${key.trim()}"`);
          i++;
        }
      } else {
        while (i < text.length && text[i] !== ',') value += text[i++];
        value = value.trim();
      }
    }
    i++; // the comma
    key = key.trim();
    if (key === '' && value === undefined) continue;
    pairs.push([key, value]);
  }
  return pairs;
}

/**
 * Parses a behaviour such as `exitAfter=5s,exitCode=1`, `ignoreStop`, `stdout="hello, world"`.
 * Throws InvalidInput naming the offending key.
 */
export function parseBehavior(text: string): ContainerBehavior {
  const behavior: Record<string, unknown> = {};
  for (const [key, value] of splitPairs(text)) {
    const spec = FIELDS[key];
    if (!spec) {
      throw invalidInput(`unknown key "${key}"; known keys: ${Object.keys(FIELDS).join(', ')}`);
    }
    switch (spec.kind) {
      case 'bool':
        if (value === undefined || value === 'true') behavior[spec.field] = true;
        else if (value === 'false') behavior[spec.field] = false;
        else throw invalidInput(`"${key}" takes true or false, not "${value}"`);
        break;
      case 'duration': {
        const ms = value === undefined ? undefined : parseDuration(value);
        if (ms === undefined)
          throw invalidInput(`"${key}" takes a duration such as 5s, 250ms or 1m30s, not "${value ?? ''}"`);
        behavior[spec.field] = ms;
        break;
      }
      case 'code': {
        if (value === undefined || !/^\d{1,3}$/.test(value) || Number(value) > 255) {
          throw invalidInput(`"${key}" takes an exit code from 0 to 255, not "${value ?? ''}"`);
        }
        behavior[spec.field] = Number(value);
        break;
      }
      case 'count':
        if (value === undefined || !/^\d{1,9}$/.test(value))
          throw invalidInput(`"${key}" takes a whole number such as 3, not "${value ?? ''}"`);
        behavior[spec.field] = Number(value);
        break;
      case 'text':
        if (value === undefined) throw invalidInput(`"${key}" needs a value, e.g. ${key}="some text"`);
        behavior[spec.field] = value;
        break;
      case 'cpu':
      case 'bytes': {
        const amount = value === undefined ? undefined : parseUsage(value, spec.kind);
        if (amount === undefined) {
          const example = spec.kind === 'cpu' ? '250m or 1.5' : '100Mi or 1G';
          throw invalidInput(`"${key}" takes a quantity such as ${example}, not "${value ?? ''}"`);
        }
        behavior[spec.field] = amount;
        break;
      }
    }
  }
  return behavior as ContainerBehavior;
}

/** A non-negative quantity in millicores (cpu) or bytes; undefined when it does not parse. */
function parseUsage(text: string, kind: 'cpu' | 'bytes'): number | undefined {
  try {
    const amount = kind === 'cpu' ? milliCpu(text) : quantityValue(text);
    return Number.isFinite(amount) && amount >= 0 ? amount : undefined;
  } catch {
    return undefined;
  }
}

/** Checks a behaviour given as an object (from `script()`), with the same rules as the text form. */
export function validateBehavior(b: ContainerBehavior): ContainerBehavior {
  for (const [key, value] of Object.entries(b)) {
    if (value === undefined) continue;
    const spec = Object.values(FIELDS).find((f) => f.field === key);
    if (!spec) throw invalidInput(`unknown behaviour field "${key}"`);
    const ok =
      spec.kind === 'bool'
        ? typeof value === 'boolean'
        : spec.kind === 'text'
          ? typeof value === 'string'
          : spec.kind === 'duration'
            ? typeof value === 'number' && Number.isFinite(value) && value >= 0
            : spec.kind === 'count' || spec.kind === 'cpu' || spec.kind === 'bytes'
              ? Number.isInteger(value) && value >= 0
              : Number.isInteger(value) && value >= 0 && value <= 255;
    if (!ok) throw invalidInput(`behaviour field "${key}" has an invalid value ${JSON.stringify(value)}`);
  }
  return b;
}

/**
 * The behaviours named by a pod's annotations: container name (or `all`) → behaviour. Throws
 * InvalidInput naming the annotation when a value does not parse.
 */
export function behaviorsFromAnnotations(annotations: {
  readonly [key: string]: string;
}): Map<string, ContainerBehavior> | undefined {
  let found: Map<string, ContainerBehavior> | undefined;
  for (const key in annotations) {
    if (!key.startsWith(BEHAVIOR_ANNOTATION_PREFIX)) continue;
    const name = key.slice(BEHAVIOR_ANNOTATION_PREFIX.length);
    try {
      (found ??= new Map()).set(name, parseBehavior(annotations[key]!));
    } catch (err) {
      throw invalidInput(`annotation "${key}": ${(err as Error).message}`);
    }
  }
  return found;
}

/** A behaviour with its defaults worked out, as a container keeps it. */
export interface ResolvedBehavior {
  readonly startDelayMs: number;
  /** Undefined: the container runs until stopped or killed. */
  readonly exitAfterMs: number | undefined;
  readonly exitCode: number;
  readonly exitReason: string | undefined;
  /** Infinity: SIGTERM is ignored. */
  readonly stopDelayMs: number;
  readonly stopExitCode: number;
  readonly failCreate: string | undefined;
  readonly failStart: string | undefined;
  readonly stdout: string | undefined;
  readonly stderr: string | undefined;
  readonly terminationMessage: string | undefined;
  /** Undefined: every probe succeeds. */
  readonly probes: ProbeScript | undefined;
  /** Simulated usage while running; zero when not scripted. */
  readonly usage: SimulatedUsage;
}

/** What a running fake container uses, as its stats report it; the growths are per second run. */
export interface SimulatedUsage {
  readonly cpuMillicores: number;
  readonly memoryBytes: number;
  readonly diskBytes: number;
  readonly memoryGrowthBytes: number;
  readonly diskGrowthBytes: number;
}

export const NO_USAGE: SimulatedUsage = Object.freeze({
  cpuMillicores: 0,
  memoryBytes: 0,
  diskBytes: 0,
  memoryGrowthBytes: 0,
  diskGrowthBytes: 0,
});

/** How a container answers its probes, worked out from the probe fields. */
export interface ProbeScript {
  /** Probe types that fail every time. */
  readonly failing: readonly ProbeType[];
  /** Probes of each type after the first this many fail. */
  readonly failAfter: number | undefined;
  /** Failing probes time out instead of being refused. */
  readonly timeout: boolean;
}

/** Delay of the exit of a crashLoop or oom container that does not say exitAfter. */
export const DEFAULT_CRASH_AFTER_MS = 1000;
export const SIGTERM_EXIT_CODE = 143;
export const SIGKILL_EXIT_CODE = 137;

/** The behaviour of a container nobody scripted: shared, allocation-free. */
export const PLAIN_BEHAVIOR: ResolvedBehavior = Object.freeze({
  startDelayMs: 0,
  exitAfterMs: undefined,
  exitCode: 0,
  exitReason: undefined,
  stopDelayMs: 0,
  stopExitCode: SIGTERM_EXIT_CODE,
  failCreate: undefined,
  failStart: undefined,
  stdout: undefined,
  stderr: undefined,
  terminationMessage: undefined,
  probes: undefined,
  usage: NO_USAGE,
});

const TYPE_FIELDS = [
  ['liveness', 'livenessFail'],
  ['readiness', 'readinessFail'],
  ['startup', 'startupFail'],
] as const satisfies ReadonlyArray<readonly [ProbeType, keyof ContainerBehavior]>;

/** The probe script of a merged behaviour; undefined when no probe field is set. */
export function resolveProbeScript(b: ContainerBehavior): ProbeScript | undefined {
  const failing = TYPE_FIELDS.filter(([, field]) => b.probeFail || b[field]).map(([type]) => type);
  const timeout = b.probeTimeout === true;
  if (failing.length === 0 && b.probeFailAfter === undefined && !timeout) return undefined;
  return { failing, failAfter: b.probeFailAfter, timeout };
}

/** Merges behaviours (later ones win field by field) and works out the defaults. */
export function resolveBehavior(layers: readonly ContainerBehavior[]): ResolvedBehavior {
  if (layers.length === 0) return PLAIN_BEHAVIOR;
  const b: ContainerBehavior = {};
  for (const layer of layers) {
    for (const [key, value] of Object.entries(layer))
      if (value !== undefined) (b as Record<string, unknown>)[key] = value;
  }
  const exitAfterMs = b.exitAfterMs ?? (b.crashLoop || b.oom ? DEFAULT_CRASH_AFTER_MS : undefined);
  return {
    startDelayMs: b.startDelayMs ?? 0,
    exitAfterMs,
    exitCode: b.oom ? SIGKILL_EXIT_CODE : (b.exitCode ?? (b.crashLoop ? 1 : 0)),
    exitReason: b.oom ? 'OOMKilled' : undefined,
    stopDelayMs: b.ignoreStop ? Infinity : (b.stopDelayMs ?? 0),
    stopExitCode: b.stopExitCode ?? SIGTERM_EXIT_CODE,
    failCreate: b.failCreate,
    failStart: b.failStart,
    stdout: b.stdout,
    stderr: b.stderr,
    terminationMessage: b.terminationMessage,
    probes: resolveProbeScript(b),
    usage:
      b.cpuMillicores || b.memoryBytes || b.diskBytes || b.memoryGrowthBytes || b.diskGrowthBytes
        ? {
            cpuMillicores: b.cpuMillicores ?? 0,
            memoryBytes: b.memoryBytes ?? 0,
            diskBytes: b.diskBytes ?? 0,
            memoryGrowthBytes: b.memoryGrowthBytes ?? 0,
            diskGrowthBytes: b.diskGrowthBytes ?? 0,
          }
        : NO_USAGE,
  };
}
