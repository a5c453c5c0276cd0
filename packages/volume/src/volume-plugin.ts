import type { ConfigMap, Pod, Secret, TokenRequestSpec, TokenRequestStatus, Volume } from '@nodelet/api';
import { type Clock, defineCapability, type Logger } from '@nodelet/kernel';

/**
 * The `volume.plugin` capability (upstream pkg/volume's VolumePlugin, Mounter and Unmounter, for the
 * volumes a node makes itself): a plugin handles one source field of a pod's `Volume` (`emptyDir`,
 * `configMap`, …, or a new one); the kubelet's volume manager asks it to set the volume up before the
 * pod's containers start, and to tear it down after the pod is gone. emptyDir, hostPath, configMap,
 * secret, downwardAPI and projected are the kubelet's own providers; a third-party plugin named in the
 * config's `plugins:` list provides another source (or replaces a built-in one) the same way.
 */
export interface VolumePlugin {
  /** Upstream-style plugin name, `kubernetes.io/configmap`; its directory is `kubernetes.io~configmap`. */
  readonly name: string;
  /** The field of `Volume` it handles: `configMap`, `secret`, … */
  readonly source: string;
  /**
   * Whether the volume's content follows objects that change (configMap, secret, downwardAPI, projected):
   * the volume manager then calls `setUp` again on every sync of the pod, as upstream remounts them.
   */
  readonly refresh?: boolean;
  /**
   * Whether containers always mount it read-only, whatever their volumeMount says (configMap, secret,
   * downwardAPI, projected: upstream's read-only API data volumes).
   */
  readonly readOnly?: boolean;
  /**
   * Makes the volume ready on the host and returns the host path the containers mount (usually
   * `ctx.dir`; hostPath returns its path). Throwing fails the mount: the kubelet reports `FailedMount`
   * with the error's message and retries on the pod's next sync.
   */
  setUp(ctx: VolumeMountContext): Promise<string>;
  /** Undoes what `setUp` did beyond the files in `ctx.dir` (a tmpfs); the kubelet removes the directory. */
  tearDown?(ctx: VolumeUnmountContext): Promise<void>;
}

export const VolumePluginCapability = defineCapability<VolumePlugin>('volume.plugin', {
  version: 1,
  cardinality: 'many',
  description: 'a kind of pod volume (emptyDir, configMap, …, or a new one)',
});

/** What the kubelet knows of a pod besides its spec, for the downward API. */
export interface PodFacts {
  nodeName: string;
  hostIPs: string[];
  podIPs: string[];
  /** The node's allocatable resources (`cpu`, `memory`, `ephemeral-storage`): the default limits. */
  allocatable: Record<string, string>;
}

export interface VolumeMountContext {
  pod: Pod;
  volume: Volume;
  /** The volume's own directory, made by the kubelet: `<root>/pods/<uid>/volumes/<plugin dir>/<name>`. */
  dir: string;
  facts: PodFacts;
  objects: PodObjects;
  /** `spec.securityContext.fsGroup`: files the volume writes belong to this group. */
  fsGroup?: number;
  /**
   * True when this kubelet set the volume up before and calls again to refresh its content (plugins
   * with `refresh`): a tmpfs is already mounted, only the files may need to change.
   */
  refreshing: boolean;
  clock: Clock;
  logger: Logger;
}

export interface VolumeUnmountContext {
  podUid: string;
  volumeName: string;
  dir: string;
  logger: Logger;
}

/**
 * The API objects a pod's volumes and environment read (upstream's configmap and secret managers and
 * the token manager). Without an API server every call fails with a message saying so.
 */
export interface PodObjects {
  /** Throws `ObjectNotFoundError` when there is no such ConfigMap. */
  getConfigMap(namespace: string, name: string): Promise<ConfigMap>;
  /** Throws `ObjectNotFoundError` when there is no such Secret. */
  getSecret(namespace: string, name: string): Promise<Secret>;
  /**
   * A token of the pod's service account for this audience and lifetime, bound to the pod (TokenRequest),
   * cached and renewed at 80 % of its lifetime or after 24 h.
   */
  getServiceAccountToken(pod: Pod, spec: TokenRequestSpec): Promise<TokenRequestStatus>;
}

/** A referenced ConfigMap or Secret that does not exist; the message is upstream's: `configmap "x" not found`. */
export class ObjectNotFoundError extends Error {
  override name = 'ObjectNotFoundError';
  constructor(
    readonly kind: 'configmap' | 'secret' | 'serviceaccount',
    readonly namespace: string,
    readonly objectName: string,
  ) {
    super(`${kind} "${objectName}" not found`);
  }
}

/** Whether `err` says the object does not exist (by name too: a second copy of this package may throw it). */
export function isObjectNotFound(err: unknown): err is ObjectNotFoundError {
  return err instanceof ObjectNotFoundError || (err instanceof Error && err.name === 'ObjectNotFoundError');
}
