/**
 * A small structured logger. Lines look like klog's (`I1130 14:38:54.123456 component] message k=v`)
 * so operators of kubelet read them without a legend. `once` reports a thing a single time per process
 * (an unsupported config field, say) instead of on every sync.
 */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

export type LogFields = Record<string, unknown>;

export interface LogRecord {
  level: LogLevel;
  component: string;
  message: string;
  fields: LogFields;
  time: number;
}

export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
  /** Logs at `level` only the first time `key` is seen by this logger family. */
  once(key: string, level: LogLevel, message: string, fields?: LogFields): void;
  child(component: string): Logger;
}

export type LogSink = (record: LogRecord) => void;

const levelOrder: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3 };
const levelLetter: Record<LogLevel, string> = { debug: 'D', info: 'I', warn: 'W', error: 'E' };

export function formatLogRecord(r: LogRecord): string {
  const d = new Date(r.time);
  const pad = (n: number, w = 2) => String(n).padStart(w, '0');
  const stamp = `${pad(d.getUTCMonth() + 1)}${pad(d.getUTCDate())} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}.${pad(d.getUTCMilliseconds(), 3)}`;
  const fields = Object.entries(r.fields)
    .map(
      ([k, v]) =>
        `${k}=${typeof v === 'string' ? JSON.stringify(v) : v instanceof Error ? JSON.stringify(v.message) : JSON.stringify(v)}`,
    )
    .join(' ');
  return `${levelLetter[r.level]}${stamp} ${r.component}] ${r.message}${fields ? ' ' + fields : ''}`;
}

/** Writes formatted lines to stderr. */
export const stderrSink: LogSink = (r) => process.stderr.write(formatLogRecord(r) + '\n');

/** Keeps records in memory: for tests that assert what was logged. */
export class MemorySink {
  readonly records: LogRecord[] = [];
  readonly sink: LogSink = (r) => void this.records.push(r);
  lines(level?: LogLevel): string[] {
    return this.records.filter((r) => !level || r.level === level).map(formatLogRecord);
  }
  find(text: string | RegExp): LogRecord[] {
    return this.records.filter((r) =>
      typeof text === 'string' ? formatLogRecord(r).includes(text) : text.test(formatLogRecord(r)),
    );
  }
}

export function createLogger(
  options: { component?: string; level?: LogLevel; sink?: LogSink; now?: () => number } = {},
): Logger {
  const shared = {
    level: options.level ?? 'info',
    sink: options.sink ?? stderrSink,
    now: options.now ?? Date.now,
    seen: new Set<string>(),
  };
  const make = (component: string): Logger => {
    const log = (level: LogLevel, message: string, fields: LogFields = {}) => {
      if (levelOrder[level] < levelOrder[shared.level]) return;
      shared.sink({ level, component, message, fields, time: shared.now() });
    };
    return {
      debug: (m, f) => log('debug', m, f),
      info: (m, f) => log('info', m, f),
      warn: (m, f) => log('warn', m, f),
      error: (m, f) => log('error', m, f),
      once(key, level, message, fields) {
        if (shared.seen.has(key)) return;
        shared.seen.add(key);
        log(level, message, fields);
      },
      child: (name) => make(component ? `${component}.${name}` : name),
    };
  };
  return make(options.component ?? 'nodelet');
}
