/**
 * Small pieces the kubelet and the runtimes share: CRI time stamps, the label and annotation
 * keys the kubelet puts on sandboxes and containers, pod log paths, label selectors, and the CRI
 * container log line format.
 */
import { invalidInput } from '@nodelet/kernel';

// ---------------------------------------------------------------------------------------------
// Time: CRI time stamps are int64 nanoseconds since the Unix epoch.
// ---------------------------------------------------------------------------------------------

const NANOS_PER_MS = 1_000_000n;
const NANOS_PER_SECOND = 1_000_000_000n;

/** Nanoseconds → whole milliseconds (rounded down), e.g. for `new Date(nanosToMs(createdAt))`. */
export function nanosToMs(nanos: bigint): number {
  let ms = nanos / NANOS_PER_MS; // truncates toward zero
  if (nanos < 0n && nanos % NANOS_PER_MS !== 0n) ms -= 1n;
  return Number(ms);
}

/** Milliseconds (fractions kept to the nanosecond) → nanoseconds. */
export function msToNanos(ms: number): bigint {
  if (!Number.isFinite(ms)) throw invalidInput(`msToNanos: ${ms} is not a finite number of milliseconds`);
  const whole = Math.floor(ms);
  const fraction = Math.round((ms - whole) * 1e6);
  return BigInt(whole) * NANOS_PER_MS + BigInt(fraction);
}

/**
 * Nanoseconds → RFC 3339 with up to nine fraction digits and trailing zeros dropped (Go's
 * `time.RFC3339Nano` in UTC), e.g. `2016-10-06T00:17:09.669794202Z`.
 */
export function formatRfc3339Nano(nanos: bigint): string {
  let seconds = nanos / NANOS_PER_SECOND;
  let fraction = nanos % NANOS_PER_SECOND;
  if (fraction < 0n) {
    fraction += NANOS_PER_SECOND;
    seconds -= 1n;
  }
  const base = new Date(Number(seconds) * 1000).toISOString().slice(0, 19); // YYYY-MM-DDTHH:MM:SS
  const digits = fraction === 0n ? '' : '.' + fraction.toString().padStart(9, '0').replace(/0+$/, '');
  return `${base}${digits}Z`;
}

const RFC3339 = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$/;

/** RFC 3339 (any fraction up to nanoseconds, `Z` or an offset) → nanoseconds; InvalidInput if malformed. */
export function parseRfc3339Nano(text: string): bigint {
  const m = RFC3339.exec(text);
  const ms = m ? Date.parse(`${m[1]}${m[3]}`) : NaN;
  if (!m || Number.isNaN(ms)) throw invalidInput(`'${text}' is not an RFC 3339 time stamp`);
  return BigInt(ms) * NANOS_PER_MS + BigInt((m[2] ?? '').padEnd(9, '0'));
}

// ---------------------------------------------------------------------------------------------
// Label and annotation keys (upstream pkg/kubelet/types/labels.go and kuberuntime/labels.go).
// ---------------------------------------------------------------------------------------------

/** Labels the kubelet puts on sandboxes (pod keys) and containers (pod keys + container name). */
export const CriLabels = {
  PodName: 'io.kubernetes.pod.name',
  PodNamespace: 'io.kubernetes.pod.namespace',
  PodUID: 'io.kubernetes.pod.uid',
  ContainerName: 'io.kubernetes.container.name',
} as const;

/** Annotations the kubelet puts on containers, read back when it recovers state from the runtime. */
export const CriAnnotations = {
  ContainerHash: 'io.kubernetes.container.hash',
  ContainerRestartCount: 'io.kubernetes.container.restartCount',
  ContainerTerminationMessagePath: 'io.kubernetes.container.terminationMessagePath',
  ContainerTerminationMessagePolicy: 'io.kubernetes.container.terminationMessagePolicy',
  ContainerPreStopHandler: 'io.kubernetes.container.preStopHandler',
  ContainerPorts: 'io.kubernetes.container.ports',
  PodTerminationGracePeriod: 'io.kubernetes.pod.terminationGracePeriod',
  PodDeletionGracePeriod: 'io.kubernetes.pod.deletionGracePeriod',
} as const;

/** True when every key of `selector` is in `labels` with the same value (CRI filter semantics). */
export function matchesLabelSelector(
  labels: { readonly [key: string]: string } | undefined,
  selector: { readonly [key: string]: string } | undefined,
): boolean {
  if (!selector) return true;
  for (const [key, value] of Object.entries(selector)) {
    if (labels?.[key] !== value) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Log paths (upstream: /var/log/pods/<namespace>_<name>_<uid>/<container>/<restartCount>.log).
// ---------------------------------------------------------------------------------------------

/** The kubelet's default root for pod logs. */
export const DEFAULT_POD_LOGS_ROOT = '/var/log/pods';

/** A sandbox's `log_directory`: `<root>/<namespace>_<name>_<uid>`. */
export function podLogsDirectory(root: string, namespace: string, name: string, uid: string): string {
  return `${root.replace(/\/+$/, '')}/${namespace}_${name}_${uid}`;
}

/** A container's `log_path`, relative to the sandbox's log_directory: `<container>/<restartCount>.log`. */
export function containerLogPath(containerName: string, restartCount: number): string {
  return `${containerName}/${restartCount}.log`;
}

// ---------------------------------------------------------------------------------------------
// CRI log lines: `<RFC3339Nano time> <stdout|stderr> <P|F> <content>\n`.
// ---------------------------------------------------------------------------------------------

export type LogStream = 'stdout' | 'stderr';

export interface CriLogLine {
  /** Nanoseconds since the epoch. */
  time: bigint;
  stream: LogStream;
  /** `P`: the content continues in the next line (no newline was written); `F`: a full line. */
  partial: boolean;
  /** The content, without the line's terminating newline. */
  content: string;
}

/** One CRI log line, with its terminating `\n`. */
export function formatCriLogLine(line: CriLogLine): string {
  return `${formatRfc3339Nano(line.time)} ${line.stream} ${line.partial ? 'P' : 'F'} ${line.content}\n`;
}

/**
 * Parses one CRI log line (the terminating newline, if present, is dropped). The tag field may
 * carry further `:`-separated tags after P/F, which are ignored. InvalidInput if malformed.
 */
export function parseCriLogLine(text: string): CriLogLine {
  const line = text.endsWith('\n') ? text.slice(0, -1) : text;
  const first = line.indexOf(' ');
  const second = first < 0 ? -1 : line.indexOf(' ', first + 1);
  const third = second < 0 ? -1 : line.indexOf(' ', second + 1);
  if (third < 0) throw invalidInput(`malformed CRI log line: '${line.slice(0, 80)}'`);
  const time = parseRfc3339Nano(line.slice(0, first));
  const stream = line.slice(first + 1, second);
  if (stream !== 'stdout' && stream !== 'stderr') {
    throw invalidInput(`CRI log line has stream '${stream}', want stdout or stderr`);
  }
  const tag = line.slice(second + 1, third).split(':')[0];
  if (tag !== 'P' && tag !== 'F') throw invalidInput(`CRI log line has tag '${tag}', want P or F`);
  return { time, stream, partial: tag === 'P', content: line.slice(third + 1) };
}

/**
 * Output written by a container, as CRI log lines: every newline-terminated line a full (`F`)
 * line, a trailing piece without a newline a partial (`P`) one. Empty output gives ''.
 */
export function formatCriLog(time: bigint, stream: LogStream, output: string): string {
  const pieces = output.split('\n');
  const rest = pieces.pop() ?? '';
  let out = '';
  for (const content of pieces) out += formatCriLogLine({ time, stream, partial: false, content });
  if (rest !== '') out += formatCriLogLine({ time, stream, partial: true, content: rest });
  return out;
}
