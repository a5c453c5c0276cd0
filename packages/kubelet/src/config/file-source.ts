import { type FSWatcher, watch } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { basename, dirname, extname, join } from 'node:path';
import type { Pod } from '@nodelet/api';
import type { Clock, EventBus, Logger } from '@nodelet/kernel';
import {
  debounceTime,
  interval,
  merge,
  type Observable,
  ReplaySubject,
  Subject,
  type Subscription,
} from 'rxjs';
import { MAX_MANIFEST_BYTES, manifestTooLarge, parseManifests } from './manifest.js';
import type { PodSource } from './source.js';
import { applyStaticPodDefaults } from './static-pod.js';

export interface FileSourceOptions {
  /** The static-manifest directory (`staticPodPath`), or a single manifest file. */
  path: string;
  nodeName: string;
  clock: Clock;
  logger: Logger;
  bus?: EventBus;
  /** Full re-list period (upstream `fileCheckFrequency`). Default 20 s. */
  fileCheckFrequencyMs?: number;
  /**
   * Quiet time after the last file-system event before re-reading: one write is a burst of events (a new
   * file: created, then modified, within a millisecond; an editor: a temporary file, then a rename).
   * Default 2 ms — upstream reacts to each event at once; 100 ms was a sixth of a pod start on
   * containerd, and 10 ms still 2%.
   */
  debounceMs?: number;
  /** Watch the directory for changes (`fs.watch`). Default true; without it only the re-list sees changes. */
  watch?: boolean;
}

/** Manifest file names read from a directory: not hidden, and YAML or JSON. */
const manifestExtensions = new Set(['.yaml', '.yml', '.json']);

interface FileEntry {
  /** The content that last produced pods, and those pods. */
  goodContent?: string;
  pods: Pod[];
  /** Content that was rejected and already reported, so it is reported once. */
  rejectedContent?: string;
}

/**
 * The static-manifest source (upstream's file source). Reads every `*.yaml`, `*.yml` and `*.json` file of
 * a directory (hidden files and other names are ignored; subdirectories are not entered), or one file when
 * the path is a file, and emits the pods of all of them as one snapshot each time that set changes. It
 * re-reads on file-system events (debounced) and re-lists every `fileCheckFrequencyMs` regardless, which
 * also catches what a watch can miss (network file systems, a directory that was replaced).
 *
 * A file is applied as a whole. When a file fails to parse or validate, one line is logged naming the file
 * and every problem, a `[Source] Manifest Rejected` event is emitted, and — stricter than upstream, which
 * drops the file's pod — the pods that file last produced are kept, so a bad edit never stops a running
 * pod. The same bad content is not reported again; any change to the file is read afresh. A path that
 * does not exist is a warning and an empty set (as upstream), and is checked again at each re-list.
 */
export class FileSource implements PodSource {
  readonly name = 'file' as const;
  readonly snapshots$: Observable<Pod[]>;

  private readonly path: string;
  private readonly subject = new ReplaySubject<Pod[]>(1);
  private readonly fsEvents = new Subject<void>();
  private readonly files = new Map<string, FileEntry>();
  private readonly origins = new Map<string, string>();
  private readonly logger: Logger;
  private readonly period: number;
  private readonly debounce: number;
  private current: Pod[] = [];
  private emitted = false;
  private pathProblem: string | undefined;
  private watcher: { fsw: FSWatcher; dir: string; ino: number } | undefined;
  private subscription: Subscription | undefined;
  private running: Promise<void> | undefined;
  private again = false;

  constructor(private readonly options: FileSourceOptions) {
    this.path = options.path.length > 1 ? options.path.replace(/\/+$/, '') : options.path;
    this.logger = options.logger;
    this.period = options.fileCheckFrequencyMs ?? 20_000;
    this.debounce = options.debounceMs ?? 2;
    this.snapshots$ = this.subject.asObservable();
  }

  start(): void {
    if (this.subscription) return;
    const { scheduler } = this.options.clock;
    this.subscription = merge(
      this.fsEvents.pipe(debounceTime(this.debounce, scheduler)),
      interval(this.period, scheduler),
    ).subscribe(() => void this.resync());
    this.logger.info('watching static pod manifests', { path: this.path, recheckMs: this.period });
    void this.resync();
  }

  stop(): void {
    this.subscription?.unsubscribe();
    this.subscription = undefined;
    this.closeWatcher();
  }

  /** The pods of the last snapshot. */
  pods(): Pod[] {
    return this.current;
  }

  originOf(pod: Pod): string {
    return this.origins.get(pod.metadata?.uid ?? '') ?? this.path;
  }

  /**
   * Re-reads the path now. Runs are serialized: a call during a run schedules one more run after it,
   * and the returned promise settles when that is done.
   */
  resync(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      do {
        this.again = false;
        try {
          await this.list();
        } catch (err) {
          this.logger.error('reading static pod manifests failed', { path: this.path, err: String(err) });
        }
      } while (this.again);
    })().finally(() => (this.running = undefined));
    return this.running;
  }

  private async list(): Promise<void> {
    let info;
    try {
      info = await stat(this.path);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      const problem =
        code === 'ENOENT'
          ? `static pod path ${this.path} does not exist; checking again every ${this.period / 1000}s`
          : `cannot read static pod path ${this.path}: ${(err as Error).message}`;
      this.reportPathProblem(problem);
      this.closeWatcher();
      if (code === 'ENOENT') {
        // Upstream emits an empty set for a missing path, so the source still counts as seen.
        const hadPods = [...this.files.values()].some((e) => e.pods.length > 0);
        this.files.clear();
        this.publish(hadPods);
      }
      return;
    }

    let names: string[];
    if (info.isDirectory()) {
      names = (await readdir(this.path))
        .filter((n) => !n.startsWith('.') && manifestExtensions.has(extname(n).toLowerCase()))
        .sort()
        .map((n) => join(this.path, n));
      this.ensureWatcher(this.path, info.ino, undefined);
    } else if (info.isFile()) {
      names = [this.path];
      const dir = dirname(this.path);
      this.ensureWatcher(dir, (await stat(dir)).ino, basename(this.path));
    } else {
      this.reportPathProblem(`static pod path ${this.path} is not a directory or a regular file`);
      return;
    }
    if (this.pathProblem) {
      this.logger.info('static pod path is readable again', { path: this.path });
      this.pathProblem = undefined;
    }

    let changed = false;
    const present = new Set<string>();
    // Read concurrently (N new manifests are N reads, not N round trips in turn), applied in name order.
    const reads = await Promise.all(names.map((file) => this.read(file)));
    names.forEach((file, i) => {
      const read = reads[i]!;
      if (read.skip) return;
      present.add(file);
      if (read.error !== undefined) this.rejectFile(file, read.error, undefined);
      else changed = this.applyContent(file, read.content!) || changed;
    });
    for (const [file, entry] of this.files) {
      if (present.has(file)) continue;
      this.files.delete(file);
      if (entry.pods.length > 0) {
        changed = true;
        this.logger.info('static pod manifest removed', { file, pods: entry.pods.length });
      }
    }
    this.publish(changed);
  }

  /** One manifest file's content, or why it has none: `skip` (gone, or not a regular file) or `error`. */
  private async read(file: string): Promise<{ content?: string; error?: string; skip?: true }> {
    try {
      const fileInfo = await stat(file);
      if (!fileInfo.isFile()) {
        this.logger.once(
          `static-pod-not-file:${file}`,
          'warn',
          'not reading manifest path: not a regular file',
          {
            path: file,
          },
        );
        return { skip: true };
      }
      // Refused before reading: a huge file would be read and parsed whole for nothing.
      if (fileInfo.size > MAX_MANIFEST_BYTES) return { error: manifestTooLarge(file, fileInfo.size) };
      return { content: await readFile(file, 'utf8') };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { skip: true }; // removed while listing
      // Unreadable now (permissions, I/O): keep what it last produced.
      return { error: `cannot read ${file}: ${(err as Error).message}` };
    }
  }

  /** Parses a file whose content is new; returns whether its pods changed. */
  private applyContent(file: string, content: string): boolean {
    const entry = this.files.get(file);
    if (entry && content === entry.goodContent) {
      if (entry.rejectedContent !== undefined) {
        this.logger.info('static pod manifest reverted to the content it last ran', { file });
        entry.rejectedContent = undefined;
      }
      return false;
    }
    if (entry && content === entry.rejectedContent) return false;

    const { pods, errors } = parseManifests(content, file, {
      defaults: (pod) =>
        applyStaticPodDefaults(pod, {
          source: 'file',
          origin: file,
          nodeName: this.options.nodeName,
          now: this.options.clock.now(),
        }),
    });
    if (errors.length > 0) {
      this.rejectFile(file, errors.join('; '), content);
      return false;
    }
    if (entry?.rejectedContent !== undefined) {
      this.logger.info('static pod manifest accepted again', { file, pods: pods.length });
    }
    this.files.set(file, { goodContent: content, pods });
    return true;
  }

  private rejectFile(file: string, reason: string, content: string | undefined): void {
    const entry = this.files.get(file) ?? { pods: [] };
    if (content !== undefined && entry.rejectedContent === content) return;
    if (content === undefined && entry.rejectedContent === reason) return;
    entry.rejectedContent = content ?? reason;
    this.files.set(file, entry);
    const kept = entry.pods.length;
    this.logger.warn(
      `rejected static pod manifest: ${reason}; ` +
        (kept > 0 ? `keeping the ${kept} pod(s) it last produced` : 'it has no pods running'),
      { file },
    );
    this.options.bus?.emit('[Source] Manifest Rejected', { source: 'file', origin: file, reason });
  }

  private publish(changed: boolean): void {
    if (!changed && this.emitted) return;
    const pods: Pod[] = [];
    this.origins.clear();
    for (const [file, entry] of [...this.files].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      for (const pod of entry.pods) {
        pods.push(pod);
        this.origins.set(pod.metadata?.uid ?? '', file);
      }
    }
    this.current = pods;
    this.emitted = true;
    this.subject.next(pods);
  }

  private reportPathProblem(problem: string): void {
    if (this.pathProblem === problem) return;
    this.pathProblem = problem;
    this.logger.warn(problem, { path: this.path });
  }

  /** Watches `dir` (for a single file, its parent, filtered to `only`); re-made when the directory is replaced. */
  private ensureWatcher(dir: string, ino: number, only: string | undefined): void {
    if (this.options.watch === false || !this.subscription) return;
    if (this.watcher && this.watcher.dir === dir && this.watcher.ino === ino) return;
    this.closeWatcher();
    try {
      const fsw = watch(dir, { persistent: false }, (_event, filename) => {
        const name = filename?.toString();
        if (name && (name.startsWith('.') || (only !== undefined && name !== only))) return;
        this.fsEvents.next();
      });
      fsw.on('error', (err) => {
        this.logger.warn(
          'watching static pod path failed; relying on the re-list until it can be watched again',
          {
            path: dir,
            err: String(err),
          },
        );
        this.closeWatcher();
      });
      this.watcher = { fsw, dir, ino };
    } catch (err) {
      this.logger.once(
        `static-pod-watch:${dir}`,
        'warn',
        'cannot watch static pod path; relying on the re-list',
        {
          path: dir,
          err: String(err),
        },
      );
    }
  }

  private closeWatcher(): void {
    this.watcher?.fsw.close();
    this.watcher = undefined;
  }
}
