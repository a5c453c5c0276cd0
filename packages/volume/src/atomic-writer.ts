import { randomInt } from 'node:crypto';
import {
  chmod,
  chown,
  lstat,
  mkdir,
  readFile,
  readdir,
  readlink,
  rename,
  rm,
  stat,
  symlink,
  unlink,
  writeFile,
} from 'node:fs/promises';
import { dirname, join, posix } from 'node:path';

/**
 * The atomic writer of configMap, secret, downwardAPI and projected volumes (upstream
 * pkg/volume/util/atomic_writer.go): a payload of files is written into a new hidden directory named
 * by the time, `..2026_12_01_10_20_30.1234567/`, and made current by renaming a symlink `..data_tmp`
 * onto `..data` — rename(2) is atomic, so a reader that resolves `..data` once sees one whole version,
 * never a mix. What the containers see are symlinks through it:
 *
 *   <dir>/..2026_12_01_10_20_30.1234567/{key, sub/file}   the files, with their modes
 *   <dir>/..data  -> ..2026_12_01_10_20_30.1234567        swapped atomically on each change
 *   <dir>/key     -> ..data/key                           one link per top-level path
 *   <dir>/sub     -> ..data/sub
 *
 * Names starting with `..` are the writer's own; payload paths may not use them. The caller
 * serialises writes to one directory.
 */
export interface FileProjection {
  data: Uint8Array | string;
  /** Permission bits of the file (`0o644`), applied whatever the process umask. */
  mode: number;
  /** Owner of the file (a projected service-account token of a pod whose containers share one user). */
  fsUser?: number;
}

/** Files by path relative to the volume directory. */
export type Payload = ReadonlyMap<string, FileProjection> | Readonly<Record<string, FileProjection>>;

export const dataDirName = '..data';
export const newDataDirName = '..data_tmp';
export const maxFileNameLength = 255;
export const maxPathLength = 4096;

export class InvalidPathError extends Error {
  override name = 'InvalidPathError';
}

/**
 * Refuses a path the writer may not create, with upstream's messages: empty, absolute, longer than 4096
 * bytes, a segment `..` or longer than 255 bytes, or a first segment starting with `..` (reserved).
 */
export function validatePath(path: string): void {
  if (path === '') throw new InvalidPathError('invalid path: must not be empty: ""');
  if (path.startsWith('/')) throw new InvalidPathError(`invalid path: must be relative path: ${path}`);
  if (Buffer.byteLength(path) > maxPathLength) {
    throw new InvalidPathError(`invalid path: must be less than or equal to ${maxPathLength} characters`);
  }
  const items = path.split('/');
  for (const item of items) {
    if (item === '..') throw new InvalidPathError(`invalid path: must not contain '..': ${path}`);
    if (Buffer.byteLength(item) > maxFileNameLength) {
      throw new InvalidPathError(
        `invalid path: filenames must be less than or equal to ${maxFileNameLength} characters`,
      );
    }
  }
  if (items[0]!.startsWith('..') && items[0]!.length > 2) {
    throw new InvalidPathError(`invalid path: must not start with '..': ${path}`);
  }
}

/** Go's filepath.Clean for a relative path that passed `validatePath`: `foo//bar/` → `foo/bar`, `./x` → `x`. */
export function cleanPath(path: string): string {
  const clean = posix.normalize(path).replace(/\/+$/, '');
  return clean === '' ? '.' : clean;
}

/** Validates every path and returns the payload by cleaned path; a path that is also another's directory is refused. */
export function validatePayload(payload: Payload): Map<string, FileProjection> {
  const clean = new Map<string, FileProjection>();
  for (const [path, file] of entries(payload)) {
    validatePath(path);
    clean.set(cleanPath(path), file);
  }
  for (const path of clean.keys()) {
    for (let dir = posix.dirname(path); dir !== '.'; dir = posix.dirname(dir)) {
      if (clean.has(dir)) {
        throw new InvalidPathError(`invalid payload: "${dir}" is a file and the directory of "${path}"`);
      }
    }
  }
  return clean;
}

export interface AtomicWriterOptions {
  /** Clock time (ms since the epoch) that names each new timestamped directory. */
  now: () => number;
}

export class AtomicWriter {
  constructor(
    readonly targetDir: string,
    private readonly options: AtomicWriterOptions,
  ) {}

  /**
   * Makes the directory hold exactly `payload`. Returns false, touching nothing, when it already does
   * (same paths, same contents). `setPerms` runs on the new timestamped directory (its name) after the
   * files are written and before they are swapped in: the fsGroup ownership of the volume.
   */
  async write(payload: Payload, setPerms?: (timestampDir: string) => Promise<void>): Promise<boolean> {
    const files = validatePayload(payload);
    const target = this.targetDir;
    await stat(target); // the volume directory must exist (ENOENT names it)
    const dataDir = join(target, dataDirName);
    const oldTsDir = await readlink(dataDir).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return '';
      throw err;
    });
    const oldTsPath = oldTsDir ? join(target, oldTsDir) : '';
    const toRemove = oldTsPath ? await this.pathsToRemove(files, oldTsPath) : new Set<string>();
    if (oldTsPath && toRemove.size === 0 && !(await this.shouldWrite(files, oldTsPath))) return false;

    const tsName = await this.newTimestampDir();
    const tsPath = join(target, tsName);
    try {
      await writePayloadToDir(files, tsPath);
      await setPerms?.(tsName);
      const tmpLink = join(target, newDataDirName);
      await rm(tmpLink, { force: true }); // left by a writer that stopped half-way
      await symlink(tsName, tmpLink);
      await rename(tmpLink, dataDir);
    } catch (err) {
      await rm(tsPath, { recursive: true, force: true });
      throw err;
    }
    await this.createUserVisibleFiles(files);
    await this.removeUserVisiblePaths(toRemove);
    if (oldTsPath && oldTsDir !== tsName) await rm(oldTsPath, { recursive: true, force: true });
    return true;
  }

  /** Paths of the current version (files and directories) that the new payload no longer has. */
  async pathsToRemove(files: ReadonlyMap<string, FileProjection>, oldTsPath: string): Promise<Set<string>> {
    const current = await readdir(oldTsPath, { recursive: true }).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return [] as string[];
      throw err;
    });
    const wanted = new Set<string>();
    for (const path of files.keys()) {
      for (let p = path; p !== '.'; p = posix.dirname(p)) wanted.add(p);
    }
    return new Set(current.filter((p) => !wanted.has(p)));
  }

  /** Whether any file of the payload differs from (or is missing in) the current version, or lost its link. */
  private async shouldWrite(files: ReadonlyMap<string, FileProjection>, oldTsPath: string): Promise<boolean> {
    for (const [path, file] of files) {
      const onDisk = await readFile(join(oldTsPath, path)).catch((err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT') return undefined;
        throw err;
      });
      if (!onDisk || !onDisk.equals(bytes(file.data))) return true;
      const link = await lstat(join(this.targetDir, topLevel(path))).catch(() => undefined);
      if (!link) return true;
    }
    return false;
  }

  /** `..<UTC time as 2006_01_02_15_04_05>.<random>`, with the volume directory's mode (its setgid bit too). */
  private async newTimestampDir(): Promise<string> {
    const stamp = goTimestamp(this.options.now());
    const mode = (await stat(this.targetDir)).mode & 0o7777;
    for (;;) {
      const name = `..${stamp}.${randomInt(0, 2 ** 32)}`;
      try {
        await mkdir(join(this.targetDir, name), { mode: 0o700 });
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'EEXIST') continue;
        throw err;
      }
      await chmod(join(this.targetDir, name), mode);
      return name;
    }
  }

  /** `k -> ..data/k` for each top-level path not linked yet. */
  private async createUserVisibleFiles(files: ReadonlyMap<string, FileProjection>): Promise<void> {
    const tops = new Set([...files.keys()].map(topLevel));
    for (const top of tops) {
      const visible = join(this.targetDir, top);
      const exists = await lstat(visible).then(
        () => true,
        () => false,
      );
      if (!exists) await symlink(posix.join(dataDirName, top), visible);
    }
  }

  /** Removes the links of top-level paths the payload dropped (what is below them went with the old version). */
  private async removeUserVisiblePaths(paths: ReadonlySet<string>): Promise<void> {
    for (const p of paths) {
      if (p.includes('/')) continue;
      await unlink(join(this.targetDir, p)).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'ENOENT') throw err;
      });
    }
  }
}

async function writePayloadToDir(files: ReadonlyMap<string, FileProjection>, dir: string): Promise<void> {
  for (const [path, file] of files) {
    const full = join(dir, path);
    await mkdir(dirname(full), { recursive: true, mode: 0o755 });
    await writeFile(full, bytes(file.data), { mode: file.mode });
    await chmod(full, file.mode); // open(2) applied the umask
    if (file.fsUser !== undefined) await chown(full, file.fsUser, -1);
  }
}

/** Go's time format `2006_01_02_15_04_05`, in UTC. */
export function goTimestamp(ms: number): string {
  const d = new Date(ms);
  const pad = (n: number) => String(n).padStart(2, '0');
  return (
    `${d.getUTCFullYear()}_${pad(d.getUTCMonth() + 1)}_${pad(d.getUTCDate())}_` +
    `${pad(d.getUTCHours())}_${pad(d.getUTCMinutes())}_${pad(d.getUTCSeconds())}`
  );
}

const topLevel = (path: string) => path.split('/', 1)[0]!;

const bytes = (data: Uint8Array | string): Buffer =>
  typeof data === 'string' ? Buffer.from(data) : Buffer.from(data.buffer, data.byteOffset, data.byteLength);

function entries(payload: Payload): Iterable<[string, FileProjection]> {
  return payload instanceof Map
    ? (payload as ReadonlyMap<string, FileProjection>).entries()
    : Object.entries(payload as Readonly<Record<string, FileProjection>>);
}
