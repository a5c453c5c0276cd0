import type { Container, Pod, Secret } from '@nodelet/api';
import { AuthConfig, type Image, ImageSpec, type ImageService, parseImageRef } from '@nodelet/cri';
import { Backoff, type Clock, errorMessage, type EventBus, type Logger } from '@nodelet/kernel';
import type { PodObjects } from '@nodelet/volume';
import { getPullSecrets, keyringOfSecrets, type RegistryCredential } from './credentials/index.js';

/**
 * Makes sure a container's image is present, per its imagePullPolicy (upstream image_manager):
 *
 *   Never        present → ok;  absent → ErrImageNeverPull
 *   IfNotPresent present → ok;  absent → pull
 *   Always       pull (the runtime skips layers it has)
 *   pull failed → ErrImagePull, and until the backoff (10 s doubling to 300 s) ends → ImagePullBackOff
 *
 * A pull is published on the bus as the pod's events, as upstream's image manager records them:
 * `Normal Pulling Pulling image "<image>"`, then `Normal Pulled Successfully pulled image "<image>"`.
 *
 * Credentials (upstream kuberuntime PullImage): the registry logins of the pod's `imagePullSecrets`
 * that match the image (credentials/keyring.ts) are tried in turn as the CRI `AuthConfig` until one
 * pull succeeds; with none matching, the pull is anonymous. A pull secret that cannot be read is a
 * `Warning FailedToRetrieveImagePullSecret` event, and the pull goes on. No credential is ever logged
 * or put in an event.
 */
export class ImagePullError extends Error {
  constructor(
    readonly reason: 'ErrImagePull' | 'ImagePullBackOff' | 'ErrImageNeverPull' | 'InvalidImageName',
    message: string,
  ) {
    super(message);
    this.name = reason;
  }
}

/** Upstream applyDefaultImageTag: an image without tag or digest means `:latest`. */
export function applyDefaultImageTag(image: string): string {
  if (!image || /\s/.test(image) || image !== image.trim()) {
    throw new ImagePullError(
      'InvalidImageName',
      `Failed to apply default image tag "${image}": invalid reference format`,
    );
  }
  if (image.includes('@')) return image;
  const lastSlash = image.lastIndexOf('/');
  const name = image.slice(lastSlash + 1);
  return name.includes(':') ? image : `${image}:latest`;
}

export function pullPolicy(container: Container): 'Always' | 'IfNotPresent' | 'Never' {
  if (container.imagePullPolicy) return container.imagePullPolicy as 'Always' | 'IfNotPresent' | 'Never';
  const image = container.image ?? '';
  const tagged = /:[^/]+$/.test(image) && !image.endsWith(':latest');
  return tagged || image.includes('@') ? 'IfNotPresent' : 'Always';
}

export class ImagePuller {
  readonly backoff: Backoff;
  /** The last pull failure per backoff key, shown in ImagePullBackOff's message (as upstream). */
  private readonly lastPullError = new Map<string, string>();
  /**
   * ImageStatus calls in flight by image: pods that start together ask once (30 pods of one image made
   * 30 identical calls). Only calls already in flight are shared; nothing is remembered after.
   */
  private readonly statusInFlight = new Map<string, Promise<Image | undefined>>();

  constructor(
    private readonly images: ImageService,
    private readonly clock: Clock,
    private readonly logger: Logger,
    options: {
      backoff?: Backoff;
      bus?: EventBus;
      /** Where the Secrets of `imagePullSecrets` are read; without it none can be (each is reported). */
      objects?: PodObjects;
    } = {},
  ) {
    this.backoff = options.backoff ?? new Backoff(clock);
    this.bus = options.bus;
    this.objects = options.objects;
  }

  private readonly bus?: EventBus;
  private readonly objects?: PodObjects;

  /** Returns the image reference to create the container from, or throws an ImagePullError. */
  async ensureImageExists(
    pod: Pod,
    container: Container,
    /** The answer of `imagePresent(container)` when the caller asked it ahead. */
    imagePresent?: Promise<Image | undefined>,
  ): Promise<{ image: string; imageRef: string; pulled: boolean }> {
    const image = applyDefaultImageTag(container.image ?? '');
    const spec = ImageSpec.fromPartial({ image, userSpecifiedImage: container.image ?? '' });
    const policy = pullPolicy(container);
    const present = policy === 'Always' ? undefined : await (imagePresent ?? this.imageStatus(spec));
    if (present) return { image, imageRef: present.id, pulled: false };
    if (policy === 'Never') {
      throw new ImagePullError(
        'ErrImageNeverPull',
        `Container image "${container.image}" is not present with pull policy of Never`,
      );
    }
    const key = `${pod.metadata?.uid}/${image}`;
    if (this.backoff.isInBackoffSinceUpdate(key)) {
      // Upstream: `Back-off pulling image "x": ErrImagePull: <the runtime's message>`.
      const last = this.lastPullError.get(key);
      throw new ImagePullError(
        'ImagePullBackOff',
        `Back-off pulling image "${container.image}"${last ? `: ErrImagePull: ${last}` : ''}`,
      );
    }
    this.lastPullError.delete(key);
    const pullSecrets = await getPullSecrets(pod, this.objects, this.logger);
    if (pullSecrets.failed.length > 0) {
      this.podEvent(
        pod,
        undefined,
        'FailedToRetrieveImagePullSecret',
        `Unable to retrieve some image pull secrets (${pullSecrets.failed.join(', ')}); attempting to pull the image may not succeed.`,
        'Warning',
      );
    }
    this.logger.info('Pulling image', { pod: podRef(pod), image: container.image });
    this.podEvent(pod, container, 'Pulling', `Pulling image "${container.image}"`);
    const start = this.clock.now();
    try {
      const credentials = this.credentialsFor(image, pullSecrets.secrets);
      const imageRef = await this.pullWith(spec, credentials);
      this.backoff.reset(key);
      this.podEvent(pod, container, 'Pulled', `Successfully pulled image "${container.image}"`);
      this.logger.info('Successfully pulled image', {
        image: container.image,
        durationMs: this.clock.now() - start,
      });
      return { image, imageRef, pulled: true };
    } catch (err) {
      this.backoff.next(key);
      const message = `Failed to pull image "${container.image}": ${errorMessage(err)}`;
      this.lastPullError.set(key, message);
      throw new ImagePullError('ErrImagePull', message);
    }
  }

  /** The credentials of these pull secrets that match the image, most specific first. */
  private credentialsFor(image: string, secrets: Secret[]): RegistryCredential[] {
    if (secrets.length === 0) return [];
    const keyring = keyringOfSecrets(secrets, this.logger);
    if (keyring.empty) return [];
    // Matched on the normalised repository, as upstream's parsers.ParseImageName gives it:
    // `busybox` → `docker.io/library/busybox`.
    return keyring.lookup(parseImageRef(image).repository);
  }

  /**
   * PullImage with each credential in turn until one succeeds (anonymous when there is none); when all
   * fail, their distinct messages, as upstream's error aggregate joins them.
   */
  private async pullWith(spec: ImageSpec, credentials: RegistryCredential[]): Promise<string> {
    if (credentials.length === 0) {
      this.logger.debug('Pulling image without credentials', { image: spec.image });
      return (await this.images.pullImage({ image: spec })).imageRef;
    }
    const failures: string[] = [];
    for (const credential of credentials) {
      const auth = AuthConfig.fromPartial({ username: credential.username, password: credential.password });
      try {
        return (await this.images.pullImage({ image: spec, auth })).imageRef;
      } catch (err) {
        const message = errorMessage(err);
        this.logger.debug('Pull with a credential failed', {
          image: spec.image,
          from: credential.source,
          err: message,
        });
        if (!failures.includes(message)) failures.push(message);
      }
    }
    throw new Error(failures.length === 1 ? failures[0] : `[${failures.join(', ')}]`);
  }

  /**
   * The ImageStatus answer `ensureImageExists` will need for this container, asked now (undefined when
   * the pull policy needs none, or the name is invalid: ensureImageExists reports that).
   */
  /** What the runtime knows of a present image (its user, for runAsNonRoot); undefined when absent. */
  status(image: string): Promise<Image | undefined> {
    return this.imageStatus(ImageSpec.fromPartial({ image }));
  }

  imagePresent(container: Container): Promise<Image | undefined> | undefined {
    if (pullPolicy(container) === 'Always') return undefined;
    let image: string;
    try {
      image = applyDefaultImageTag(container.image ?? '');
    } catch {
      return undefined;
    }
    return this.imageStatus(ImageSpec.fromPartial({ image, userSpecifiedImage: container.image ?? '' }));
  }

  private imageStatus(spec: ImageSpec): Promise<Image | undefined> {
    const key = `${spec.image}\n${spec.userSpecifiedImage}`;
    let status = this.statusInFlight.get(key);
    if (!status) {
      status = this.images
        .imageStatus({ image: spec, verbose: false })
        .then((r) => r.image)
        .finally(() => this.statusInFlight.delete(key));
      this.statusInFlight.set(key, status);
    }
    return status;
  }

  private podEvent(
    pod: Pod,
    container: Container | undefined,
    reason: 'Pulling' | 'Pulled' | 'FailedToRetrieveImagePullSecret',
    message: string,
    eventType: 'Normal' | 'Warning' = 'Normal',
  ): void {
    const meta = pod.metadata!;
    this.bus?.emit('[Kubelet] Pod Event', {
      podUid: meta.uid!,
      podName: meta.name!,
      namespace: meta.namespace ?? 'default',
      eventType,
      reason,
      message,
      ...(container && { container: container.name }),
    });
  }

  /** When the current image-pull backoff of this pod's image ends (to requeue the pod then). */
  backoffEndsAt(pod: Pod, container: Container): number | undefined {
    const key = `${pod.metadata?.uid}/${applyDefaultImageTag(container.image ?? '')}`;
    return this.backoff.isInBackoffSinceUpdate(key) ? this.backoff.endsAt(key) : undefined;
  }
}

export const podRef = (pod: Pod) => `${pod.metadata?.namespace ?? 'default'}/${pod.metadata?.name}`;
