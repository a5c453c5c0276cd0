import { createHash } from 'node:crypto';
import { type Clock, notFound } from '@nodelet/kernel';
import type { Image } from '@nodelet/cri';
import { isImageId, parseImageRef } from './image-ref.js';

/** One image in the fake store. Ids and digests are derived from the name, so they are stable across runs. */
export interface ImageRecord {
  /** `sha256:<64 hex>`. */
  readonly id: string;
  readonly repoTags: readonly string[];
  readonly repoDigests: readonly string[];
  readonly size: bigint;
  /** Pinned images (the pause image) are never garbage collected by the kubelet. */
  readonly pinned: boolean;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/**
 * The images of a fake node: references normalised like containerd's, pulls that take
 * `pullLatencyMs` on the clock and fail for `missingImages` as a registry 404 does.
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
  ) {}

  /** Makes `ref` present (as if pulled); returns its record. InvalidInput if malformed. */
  add(ref: string): ImageRecord {
    const parsed = parseImageRef(ref);
    const existing = this.byRef.get(parsed.normalized);
    if (existing) return existing;
    const id = `sha256:${sha256(parsed.normalized)}`;
    const record: ImageRecord = Object.freeze({
      id,
      repoTags: Object.freeze(parsed.tag !== undefined ? [parsed.normalized] : []),
      repoDigests: Object.freeze([
        parsed.digest !== undefined
          ? parsed.normalized
          : `${parsed.repository}@sha256:${sha256(`manifest:${parsed.normalized}`)}`,
      ]),
      size: BigInt(700_000 + (parseInt(id.slice(7, 15), 16) % 60_000_000)),
      pinned: parsed.path.endsWith('/pause') || parsed.path === 'pause',
    });
    this.byId.set(id, record);
    for (const name of [...record.repoTags, ...record.repoDigests]) this.byRef.set(name, record);
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

  /** Removes the image (every tag and digest of it); a name that is not present is fine. */
  remove(refOrId: string): void {
    const record = this.resolve(refOrId);
    if (!record) return;
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

  /**
   * Marks a reference as missing from its registry (or present again). A reference without tag or
   * digest stands for the whole repository.
   */
  setMissing(ref: string, missing: boolean): void {
    const parsed = parseImageRef(ref);
    const lastSegment = ref.slice(ref.lastIndexOf('/') + 1);
    const wholeRepository = !/[:@]/.test(lastSegment);
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
  return {
    id: r.id,
    repoTags: [...r.repoTags],
    repoDigests: [...r.repoDigests],
    size: r.size,
    uid: undefined,
    username: '',
    spec: undefined,
    pinned: r.pinned,
  };
}
