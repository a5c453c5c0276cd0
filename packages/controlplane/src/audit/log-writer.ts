import { chmod, mkdir } from 'node:fs/promises';
import { createWriteStream } from 'node:fs';
import { dirname } from 'node:path';
import type { Writable } from 'node:stream';
import type { Logger } from '@nodelet/kernel';
import type { AuditEvent } from './event.js';

export interface AuditLogWriterOptions {
  /** A file the log is appended to (made 0600: it names users and may hold request bodies), or `-`. */
  path: string;
  logger: Logger;
  /**
   * Bytes of lines waiting for the disk (or stdout) beyond which new events are dropped and counted:
   * a slow disk delays the log, never a request, and memory stays bounded (default 16 MiB).
   */
  maxPendingBytes?: number;
}

/** Appends events as JSON lines (kube-apiserver's log backend, --audit-log-format=json). */
export class AuditLogWriter {
  private dropped = 0;
  private closed = false;

  /** Writes to `out` (a file stream it ends on close when `ownsStream`, or stdout). */
  constructor(
    private readonly out: Writable,
    private readonly ownsStream: boolean,
    private readonly logger: Logger,
    private readonly maxPendingBytes = 16 * 1024 * 1024,
  ) {
    out.on('error', (err) => this.logger.error('audit log write failed', { err: String(err) }));
  }

  static async open(options: AuditLogWriterOptions): Promise<AuditLogWriter> {
    const max = options.maxPendingBytes;
    if (options.path === '-') return new AuditLogWriter(process.stdout, false, options.logger, max);
    await mkdir(dirname(options.path), { recursive: true });
    const stream = createWriteStream(options.path, { flags: 'a', mode: 0o600 });
    await new Promise<void>((resolve, reject) => {
      stream.once('open', () => resolve());
      stream.once('error', (err) =>
        reject(new Error(`${options.path}: cannot open the audit log: ${err.message}`)),
      );
    });
    // An existing file keeps its mode on open: set it, whatever the umask or an earlier run left.
    await chmod(options.path, 0o600);
    return new AuditLogWriter(stream, true, options.logger, max);
  }

  /** Events dropped because the output fell behind. */
  get droppedEvents(): number {
    return this.dropped;
  }

  write(event: AuditEvent): void {
    if (this.closed) return;
    if (this.out.writableLength > this.maxPendingBytes) {
      if (this.dropped++ % 1000 === 0) {
        this.logger.warn('audit log output is behind; dropping events', { dropped: this.dropped });
      }
      return;
    }
    this.out.write(`${JSON.stringify(event)}\n`);
  }

  /** Writes what is pending and closes the file (stdout stays open). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (!this.ownsStream) return;
    await new Promise<void>((resolve) => this.out.end(() => resolve()));
  }
}
