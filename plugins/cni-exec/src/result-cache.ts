import { mkdir, readFile, rename, rm, rmdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { errorMessage } from '@nodelet/kernel';

export const CACHE_KIND = 'nodeletCniCacheV1';

/**
 * What an ADD leaves behind for the DEL and CHECK of the same attachment (as libcni's result cache):
 * the final result, and the configuration that produced it, so the attachment is torn down with the
 * plugins that set it up even if the configuration directory changed since.
 */
export interface CachedAttachment {
  readonly kind: typeof CACHE_KIND;
  readonly containerId: string;
  readonly ifName: string;
  readonly networkName: string;
  /** The configuration file the network came from at ADD. */
  readonly confPath: string;
  /** The configuration list as executed (see `toConflist`). */
  readonly config: unknown;
  readonly netns: string;
  readonly cniArgs: string;
  readonly capabilityArgs: Readonly<Record<string, unknown>>;
  /** The final ADD result, exactly as the last plugin printed it. */
  readonly result: unknown;
}

/** One JSON file per attachment: `<dir>/results/<containerId>/<ifName>.json`, written atomically. */
export class ResultCache {
  constructor(readonly dir: string) {}

  path(containerId: string, ifName: string): string {
    return join(this.dir, 'results', containerId, `${ifName}.json`);
  }

  /** The cached attachment, undefined when there is none; throws when the file is unreadable or corrupt. */
  async read(containerId: string, ifName: string): Promise<CachedAttachment | undefined> {
    const path = this.path(containerId, ifName);
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw new Error(`cannot read the cached CNI result ${path}: ${errorMessage(err)}`);
    }
    let entry: Partial<CachedAttachment>;
    try {
      entry = JSON.parse(text) as Partial<CachedAttachment>;
    } catch (err) {
      throw new Error(`the cached CNI result ${path} is not valid JSON: ${errorMessage(err)}`);
    }
    if (entry?.kind !== CACHE_KIND || entry.containerId !== containerId || entry.ifName !== ifName) {
      throw new Error(`the cached CNI result ${path} is not a ${CACHE_KIND} entry for this attachment`);
    }
    return entry as CachedAttachment;
  }

  async write(entry: CachedAttachment): Promise<void> {
    const path = this.path(entry.containerId, entry.ifName);
    await mkdir(dirname(path), { recursive: true, mode: 0o700 });
    const tmp = `${path}.${process.pid}.tmp`;
    await writeFile(tmp, JSON.stringify(entry), { mode: 0o600 });
    await rename(tmp, path);
  }

  async remove(containerId: string, ifName: string): Promise<void> {
    const path = this.path(containerId, ifName);
    await rm(path, { force: true });
    await rmdir(dirname(path)).catch(() => undefined); // only when no other interface of the pod is left
  }
}
