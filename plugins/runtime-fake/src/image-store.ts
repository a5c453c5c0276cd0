import { createHash } from 'node:crypto';
import { type Clock, invalidInput, notFound } from '@nodelet/kernel';
import type { Image } from '@nodelet/cri';
import { type ImageConfig, ImageTable, imageUser, isWholeRepository } from './image-config.js';
import { type ImageRef, isImageId, parseImageRef } from './image-ref.js';

/**
 * One image in the fake store. Ids and digests are derived from the name of the image (its first
 * reference, or the first of its table entry), so they are stable across runs.
 */
export interface ImageRecord {
  /** `sha256:<64 hex>`. */
  readonly id: string;
  /** Every tag of the image, in the order they arrived. */
  readonly repoTags: string[];
  /** `repository@sha256:…`, one per repository the image is known in. */
  readonly repoDigests: string[];
  readonly size: bigint;
  /** Pinned images (the pause image) are never garbage collected by the kubelet. */
  readonly pinned: boolean;
  /** User, entrypoint, cmd and start output, from the image table. */
  readonly config: ImageConfig;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/**
 * The images of a fake node: references normalised like containerd's, several tags of one image
 * under one id (from the image table, or `tag`), pulls that take `pullLatencyMs` on the clock and
 * fail for `missingImages` as a registry 404 does.
 */
export class ImageStore {
  private readonly byRef = new Map<string, ImageRecord>();
  private readonly byId = new Map<string, ImageRecord>();
  /** Normalised references that fail to pull. */
  private readonly missingRefs = new Set<string>();
  /** Repositories (`domain/path`) whose every tag fails to pull: entries given without tag or digest. */
  private readonly missingRepos = new Set<string>();

  constructor(
    private readonly clock: Clock,
    private readonly pullLatencyMs: number,
    private readonly table: ImageTable = new ImageTable([]),
  ) {}

  /** Makes `ref` present (as if pulled); returns its record. InvalidInput if malformed. */
  add(ref: string): ImageRecord {
    const parsed = parseImageRef(ref);
    const existing = this.byRef.get(parsed.normalized);
    if (existing) return existing;
    const { key, config } = this.table.lookup(parsed.normalized, parsed.repository);
    const id = `sha256:${sha256(key)}`;
    let record = this.byId.get(id);
    if (!record) {
      record = {
        id,
        repoTags: [],
        repoDigests: [],
        size: BigInt(700_000 + (parseInt(id.slice(7, 15), 16) % 60_000_000)),
        pinned: parsed.path.endsWith('/pause') || parsed.path === 'pause',
        config,
      };
      this.byId.set(id, record);
    }
    this.addName(record, parsed, key);
    return record;
  }

  /**
   * Gives the image `source` names the tag `target` too (as `ctr images tag` does); a tag that named
   * another image moves. NotFound when `source` is absent; InvalidInput when `target` has no tag.
   */
  tag(source: string, target: string): ImageRecord {
    const record = this.resolve(source);
    if (!record) throw notFound(`image "${source}": not found`);
    const parsed = parseImageRef(target);
    if (parsed.tag === undefined) throw invalidInput(`tag "${target}": give a reference with a tag`);
    const holder = this.byRef.get(parsed.normalized);
    if (holder === record) return record;
    if (holder) this.untag(holder, parsed.normalized, parsed.repository);
    this.addName(record, parsed, parsed.normalized);
    return record;
  }

  /**
   * The image a reference or id names, or undefined when it is not present. InvalidInput when the
   * reference is malformed.
   */
  resolve(refOrId: string): ImageRecord | undefined {
    if (isImageId(refOrId))
      return this.byId.get(refOrId.startsWith('sha256:') ? refOrId : `sha256:${refOrId}`);
    return this.byRef.get(parseImageRef(refOrId).normalized);
  }

  /**
   * RemoveImage: by id or repo digest the whole image goes; by tag only that tag, and the image with
   * its last tag (as CRI-O does). A name that is not present is fine.
   */
  remove(refOrId: string): void {
    const record = this.resolve(refOrId);
    if (!record) return;
    if (!isImageId(refOrId)) {
      const parsed = parseImageRef(refOrId);
      if (parsed.tag !== undefined && record.repoTags.length > 1) {
        this.untag(record, parsed.normalized, parsed.repository);
        return;
      }
    }
    this.byId.delete(record.id);
    for (const name of [...record.repoTags, ...record.repoDigests]) this.byRef.delete(name);
  }

  list(): ImageRecord[] {
    return [...this.byId.values()];
  }

  get count(): number {
    return this.byId.size;
  }

  usedBytes(): bigint {
    let total = 0n;
    for (const r of this.byId.values()) total += r.size;
    return total;
  }

  private addName(record: ImageRecord, parsed: ImageRef, key: string): void {
    if (parsed.digest !== undefined) {
      addOnce(record.repoDigests, parsed.normalized);
      this.byRef.set(parsed.normalized, record);
      return;
    }
    addOnce(record.repoTags, parsed.normalized);
    this.byRef.set(parsed.normalized, record);
    if (!record.repoDigests.some((d) => d.startsWith(`${parsed.repository}@`))) {
      // One manifest digest per repository: of the image's key when it has one, else of the tag.
      const digest = `${parsed.repository}@sha256:${sha256(`manifest:${key}`)}`;
      record.repoDigests.push(digest);
      this.byRef.set(digest, record);
    }
  }

  /** Takes one tag off an image; its repository's digest goes with the repository's last tag. */
  private untag(record: ImageRecord, tag: string, repository: string): void {
    record.repoTags.splice(record.repoTags.indexOf(tag), 1);
    this.byRef.delete(tag);
    if (record.repoTags.some((t) => t.startsWith(`${repository}:`))) return;
    const i = record.repoDigests.findIndex((d) => d.startsWith(`${repository}@`));
    if (i >= 0 && record.repoDigests.length > 1) this.byRef.delete(record.repoDigests.splice(i, 1)[0]!);
  }

  /**
   * Marks a reference as missing from its registry (or present again). A reference without tag or
   * digest stands for the whole repository.
   */
  setMissing(ref: string, missing: boolean): void {
    const parsed = parseImageRef(ref);
    const wholeRepository = isWholeRepository(ref);
    const set = wholeRepository ? this.missingRepos : this.missingRefs;
    const key = wholeRepository ? parsed.repository : parsed.normalized;
    if (missing) set.add(key);
    else set.delete(key);
  }

  /** Pulls `ref`: waits the configured latency, then fails like a registry 404 or stores the image. */
  async pull(ref: string): Promise<ImageRecord> {
    if (isImageId(ref)) {
      const present = this.resolve(ref);
      if (present) return present;
      throw notFound(
        `failed to pull and unpack image "${ref}": failed to resolve reference "${ref}": ${ref}: not found`,
      );
    }
    const parsed = parseImageRef(ref); // InvalidInput before any latency, as containerd parses first
    if (this.pullLatencyMs > 0) await this.clock.sleep(this.pullLatencyMs);
    const name = parsed.normalized;
    if (this.missingRefs.has(name) || this.missingRepos.has(parsed.repository)) {
      throw notFound(
        `failed to pull and unpack image "${name}": failed to resolve reference "${name}": ${name}: not found`,
      );
    }
    return this.add(name);
  }
}

/** The CRI message for an image record (a fresh object: callers may change it). */
export function toImageMessage(r: ImageRecord): Image {
  const { uid, username } = imageUser(r.config.user);
  return {
    id: r.id,
    repoTags: [...r.repoTags],
    repoDigests: [...r.repoDigests],
    size: r.size,
    uid: uid === undefined ? undefined : { value: uid },
    username,
    spec: undefined,
    pinned: r.pinned,
  };
}

function addOnce(list: string[], item: string): void {
  if (!list.includes(item)) list.push(item);
}
