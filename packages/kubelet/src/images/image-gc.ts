import type { ImageService, RuntimeService, StatsProvider } from '@nodelet/cri';
import { type Clock, errorMessage, type Logger, type Loop } from '@nodelet/kernel';

/**
 * Image garbage collection (upstream pkg/kubelet/images/image_gc_manager.go). Every 5 minutes, when the
 * image file system is used above `imageGCHighThresholdPercent`, the least recently used images that no
 * container (running or exited) uses, that are not pinned and older than `imageMinimumGCAge`, are removed
 * until usage is below `imageGCLowThresholdPercent`; images unused for `imageMaximumGCAge` go whatever
 * the usage. When it cannot free enough it says so in a Warning event. Last use is tracked in memory,
 * as upstream: a restarted kubelet starts counting again, and the images there at its start count as
 * detected long ago (upstream's initial detection), so reclaim under disk pressure may take them at once.
 * The runtime's sandbox image is always in use: containerd before 1.7 does not pin it, and without it no
 * new pod starts (upstream kept `--pod-infra-container-image` out of collection for the same reason).
 */
export interface ImageGCPolicy {
  /** Percent of the image file system in use that starts a collection (85). */
  highThresholdPercent: number;
  /** Percent a collection frees down to (80). */
  lowThresholdPercent: number;
  /** An image detected more recently than this is never removed (2 min). */
  minAgeMs: number;
  /** An image unused for this long is removed (0: never). */
  maxAgeMs: number;
}

export const DEFAULT_IMAGE_GC_POLICY: ImageGCPolicy = {
  highThresholdPercent: 85,
  lowThresholdPercent: 80,
  minAgeMs: 2 * 60_000,
  maxAgeMs: 0,
};

/** Upstream ImageGCPeriod. */
export const IMAGE_GC_PERIOD_MS = 5 * 60_000;

/** The detection time of the images found at start: unknown, long past (upstream's zero time). */
const DETECTED_BEFORE_START = Number.MIN_SAFE_INTEGER;

interface ImageRecord {
  firstDetected: number;
  lastUsed: number;
  size: number;
  pinned: boolean;
  tags: string[];
}

export interface ImageGCDeps {
  runtime: RuntimeService;
  images: ImageService;
  stats: StatsProvider;
  clock: Clock;
  logger: Logger;
  /** A Warning event on the node (FreeDiskSpaceFailed, ImageGCFailed). */
  nodeEvent?(reason: string, message: string): void;
}

/** Refuses a policy upstream refuses (validateImageGCPolicy), naming the field. */
export function validateImageGCPolicy(p: ImageGCPolicy): void {
  const pct = (field: string, v: number) => {
    if (!(Number.isInteger(v) && v >= 0 && v <= 100))
      throw new Error(`field "${field}" must be an integer from 0 to 100, got ${v}`);
  };
  pct('imageGCHighThresholdPercent', p.highThresholdPercent);
  pct('imageGCLowThresholdPercent', p.lowThresholdPercent);
  if (p.lowThresholdPercent > p.highThresholdPercent) {
    throw new Error(
      `field "imageGCLowThresholdPercent" (${p.lowThresholdPercent}) must not be above "imageGCHighThresholdPercent" (${p.highThresholdPercent})`,
    );
  }
  if (p.maxAgeMs !== 0 && p.maxAgeMs <= p.minAgeMs) {
    throw new Error(`field "imageMaximumGCAge" must be 0 or above "imageMinimumGCAge"`);
  }
}

export class ImageGarbageCollector {
  private readonly records = new Map<string, ImageRecord>();
  private loop?: Loop;
  private failedBefore = false;
  /** The runtime's sandbox image, asked once it answers (a failed asking is asked again). */
  private sandboxImage?: Promise<string | undefined>;

  constructor(
    private readonly deps: ImageGCDeps,
    readonly policy: ImageGCPolicy = DEFAULT_IMAGE_GC_POLICY,
  ) {
    validateImageGCPolicy(policy);
  }

  start(periodMs = IMAGE_GC_PERIOD_MS): void {
    this.detectImages(DETECTED_BEFORE_START).catch((err) =>
      this.deps.logger.warn('Initial image detection failed', { err: errorMessage(err) }),
    );
    this.loop = this.deps.clock.loop(() => this.periodic(), { period: periodMs, initialDelay: periodMs });
  }

  stop(): void {
    this.loop?.stop();
  }

  /** One periodic pass: a failure to free enough is an event, the second in a row also ImageGCFailed. */
  private async periodic(): Promise<void> {
    try {
      await this.garbageCollect();
      this.failedBefore = false;
    } catch (err) {
      if (this.failedBefore) this.deps.nodeEvent?.('ImageGCFailed', errorMessage(err));
      else this.deps.logger.error('Image garbage collection failed once', { err: errorMessage(err) });
      this.failedBefore = true;
    }
  }

  /**
   * Refreshes the records: new images detected at `detectedAt`, images a container uses (and the sandbox
   * image) last used now.
   */
  async detectImages(detectedAt = this.deps.clock.now()): Promise<Set<string>> {
    const now = Math.max(detectedAt, this.deps.clock.now());
    const [{ images }, { containers }, sandboxImage] = await Promise.all([
      this.deps.images.listImages({}),
      this.deps.runtime.listContainers({}),
      this.runtimeSandboxImage(),
    ]);
    const inUse = new Set<string>();
    if (sandboxImage) inUse.add(sandboxImage);
    for (const c of containers) {
      if (c.imageRef) inUse.add(c.imageRef);
      if (c.image?.image) inUse.add(c.image.image);
    }
    const seen = new Set<string>();
    for (const image of images) {
      seen.add(image.id);
      const used = inUse.has(image.id) || image.repoTags.some((t) => inUse.has(t));
      let record = this.records.get(image.id);
      if (!record) {
        record = {
          firstDetected: detectedAt,
          lastUsed: 0,
          size: Number(image.size),
          pinned: image.pinned,
          tags: image.repoTags,
        };
        this.records.set(image.id, record);
      }
      if (used) record.lastUsed = now;
      record.size = Number(image.size);
      record.pinned = image.pinned;
      record.tags = image.repoTags;
    }
    for (const id of [...this.records.keys()]) if (!seen.has(id)) this.records.delete(id);
    const inUseIds = new Set<string>();
    for (const image of images)
      if (inUse.has(image.id) || image.repoTags.some((t) => inUse.has(t))) inUseIds.add(image.id);
    return inUseIds;
  }

  /** The sandbox image named in the runtime's verbose status (containerd: `config.sandboxImage`). */
  private runtimeSandboxImage(): Promise<string | undefined> {
    this.sandboxImage ??= this.deps.runtime.status({ verbose: true }).then(
      ({ info }) => sandboxImageOf(info),
      () => {
        this.sandboxImage = undefined;
        return undefined;
      },
    );
    return this.sandboxImage;
  }

  /**
   * Upstream GarbageCollect: old images first (maximum age), then, above the high threshold, the least
   * recently used until below the low one. Throws when it could not free enough.
   */
  async garbageCollect(): Promise<void> {
    const now = this.deps.clock.now();
    if (this.policy.maxAgeMs > 0) await this.freeOldImages(now);
    const fs = (await this.deps.stats.snapshot()).node.runtime?.imageFs;
    const capacity = fs?.capacityBytes ?? 0;
    const available = fs?.availableBytes ?? 0;
    if (!fs || capacity <= 0) throw new Error('invalid capacity 0 on image filesystem');
    const usagePercent = 100 - Math.trunc((available * 100) / capacity);
    if (usagePercent < this.policy.highThresholdPercent) return;
    const amountToFree = Math.trunc((capacity * (100 - this.policy.lowThresholdPercent)) / 100) - available;
    this.deps.logger.info(
      'Disk usage on image filesystem is over the high threshold, trying to free bytes down to the low threshold',
      {
        usage: usagePercent,
        highThreshold: this.policy.highThresholdPercent,
        amountToFree,
        lowThreshold: this.policy.lowThresholdPercent,
      },
    );
    const freed = await this.freeSpace(amountToFree, now);
    if (freed < amountToFree) {
      const message = `Failed to garbage collect required amount of images. Attempted to free ${amountToFree} bytes, but only found ${freed} bytes eligible to free.`;
      this.deps.nodeEvent?.('FreeDiskSpaceFailed', message);
      throw new Error(message);
    }
  }

  /** Every image no container uses, oldest use first (upstream DeleteUnusedImages; eviction's reclaim). */
  async deleteUnusedImages(): Promise<void> {
    await this.freeSpace(Number.MAX_SAFE_INTEGER, this.deps.clock.now());
  }

  private async freeOldImages(now: number): Promise<void> {
    const inUse = await this.detectImages(now);
    for (const [id, r] of this.records) {
      if (inUse.has(id) || r.pinned) continue;
      if (now - Math.max(r.lastUsed, r.firstDetected) > this.policy.maxAgeMs) await this.remove(id, r);
    }
  }

  /** Removes eligible images, least recently used first, until `bytesToFree` are freed; the bytes freed. */
  private async freeSpace(bytesToFree: number, now: number): Promise<number> {
    const inUse = await this.detectImages(now);
    const candidates = [...this.records]
      .filter(([id, r]) => !inUse.has(id) && !r.pinned)
      .sort(([, a], [, b]) => a.lastUsed - b.lastUsed || a.firstDetected - b.firstDetected);
    let freed = 0;
    for (const [id, r] of candidates) {
      if (freed >= bytesToFree) break;
      // Never an image just seen: it may be about to be used (upstream's minimum age).
      if (now - r.firstDetected < this.policy.minAgeMs) continue;
      if (await this.remove(id, r)) freed += r.size;
    }
    return freed;
  }

  private async remove(id: string, r: ImageRecord): Promise<boolean> {
    this.deps.logger.info('Removing image to free bytes', {
      imageID: id,
      size: r.size,
      tags: r.tags.join(','),
    });
    try {
      await this.deps.images.removeImage({
        image: { image: id, annotations: {}, runtimeHandler: '', userSpecifiedImage: '', imageRef: id },
      });
    } catch (err) {
      this.deps.logger.error('Failed to remove image', { imageID: id, err: errorMessage(err) });
      return false;
    }
    this.records.delete(id);
    return true;
  }
}

/** `sandboxImage` of the runtime's verbose status `config` JSON (containerd's CRI plugin), if any. */
export function sandboxImageOf(info: Record<string, string>): string | undefined {
  try {
    const image = (JSON.parse(info['config'] ?? '{}') as { sandboxImage?: unknown }).sandboxImage;
    return typeof image === 'string' && image !== '' ? image : undefined;
  } catch {
    return undefined;
  }
}
