import { appendFileSync, mkdirSync } from 'node:fs';
import { dirname, isAbsolute } from 'node:path';
import type { Logger } from '@nodelet/kernel';
import { criLogLines, LogBuffer, type LogStream } from './cri-log.js';
import type { ContainerRecord } from './records.js';

/**
 * Container output in the CRI log format: the newest lines in memory per container (allocated on
 * the first line, so a silent container costs nothing) and appended to the file the kubelet reads
 * (`<logDirectory>/<logPath>`), as runtimes write it. Appends are one write per burst of output, on
 * a file opened in append mode and closed again, so a node of many containers holds no descriptors
 * and a file rotated away by the kubelet is simply created again: ReopenContainerLog has nothing to
 * do beyond making sure the file exists.
 *
 * `writeLogs` unset: a file that cannot be created is a warning (once per container) and the lines stay
 * in memory; true: StartContainer fails as containerd's does; false: memory only.
 */
export class ContainerLogs {
  constructor(
    private readonly options: {
      writeLogs: boolean | undefined;
      maxLogLines: number;
      logger?: Logger | undefined;
    },
  ) {}

  /** Creates the log file and its directories; throws what the filesystem says when writeLogs is true. */
  open(c: ContainerRecord): void {
    if (!this.toFile(c)) return;
    try {
      appendCreatingDirectory(c.logPath, '');
    } catch (err) {
      if (this.options.writeLogs === true) throw err;
      this.warn(c, err);
    }
  }

  append(c: ContainerRecord, nowNs: bigint, stream: LogStream, text: string): void {
    const lines = criLogLines(nowNs, stream, text);
    if (lines.length === 0) return;
    (c.logs ??= new LogBuffer(this.options.maxLogLines)).push(lines);
    if (!this.toFile(c)) return;
    try {
      appendCreatingDirectory(c.logPath, lines.join('\n') + '\n');
    } catch (err) {
      this.warn(c, err);
    }
  }

  private warn(c: ContainerRecord, err: unknown): void {
    this.options.logger?.once(`log-write:${c.id}`, 'warn', 'cannot write container log', {
      container: c.id,
      path: c.logPath,
      err: err instanceof Error ? err.message : String(err),
    });
  }

  private toFile(c: ContainerRecord): boolean {
    return this.options.writeLogs !== false && isAbsolute(c.logPath);
  }
}

/** Appends, making the directory only when it is missing: the usual case costs one open-write-close. */
function appendCreatingDirectory(path: string, text: string): void {
  try {
    appendFileSync(path, text);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    mkdirSync(dirname(path), { recursive: true });
    appendFileSync(path, text);
  }
}
