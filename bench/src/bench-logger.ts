import { createLogger, formatLogRecord, type LogLevel, type LogRecord } from '@nodelet/kernel';

/** A logger as the kubelet would have at info level: records are counted, warnings and errors shown. */
export function benchLogger() {
  const counts: Record<LogLevel, number> = { debug: 0, info: 0, warn: 0, error: 0 };
  let shown = 0;
  const sink = (r: LogRecord) => {
    counts[r.level]++;
    if ((r.level === 'warn' || r.level === 'error') && shown++ < 10)
      process.stderr.write(formatLogRecord(r) + '\n');
  };
  return { logger: createLogger({ component: 'bench', level: 'info', sink }), counts };
}
