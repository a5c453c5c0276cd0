import { appendFileSync, mkdirSync } from 'node:fs';
import { dirname, isAbsolute } from 'node:path';
import type { Logger } from '@nodelet/kernel';
import { criLogLines, LogBuffer, type LogStream } from './cri-log.js';
import type { ContainerRecord } from './records.js';

/**
 * Container output in the CRI log format: the newest lines in memory per container (allocated on
 * the first line, so a silent container costs nothing) and, with `writeLogs`, appended to the file
 * the kubelet reads. Writes open, append and close, so a file rotated away by the kubelet is simply
 * created again: ReopenContainerLog has nothing to do beyond making sure the file exists.
 */
export class ContainerLogs {
  constructor(
    private readonly options: { writeLogs: boolean; maxLogLines: number; logger?: Logger | undefined },
  ) {}

  /** Creates the log file and its directories when logs go to files; throws what the filesystem says. */
  open(c: ContainerRecord): void {
    if (!this.toFile(c)) return;
    mkdirSync(dirname(c.logPath), { recursive: true });
    appendFileSync(c.logPath, '');
  }

  append(c: ContainerRecord, nowNs: bigint, stream: LogStream, text: string): void {
    const lines = criLogLines(nowNs, stream, text);
    if (lines.length === 0) return;
    (c.logs ??= new LogBuffer(this.options.maxLogLines)).push(lines);
    if (!this.toFile(c)) return;
    try {
      appendFileSync(c.logPath, lines.join('\n') + '\n');
    } catch (err) {
      this.options.logger?.once(`log-write:${c.id}`, 'warn', 'cannot write container log', {
        container: c.id,
        path: c.logPath,
        err: err instanceof Error ? err.message : String(err),
      });
    }
  }

  private toFile(c: ContainerRecord): boolean {
    return this.options.writeLogs && isAbsolute(c.logPath);
  }
}
