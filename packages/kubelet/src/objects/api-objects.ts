import type { ConfigMap, Pod, Secret, Service, TokenRequestSpec, TokenRequestStatus } from '@nodelet/api';
import type { KubeApi } from '@nodelet/client';
import type { Clock, Logger } from '@nodelet/kernel';
import type { PodObjects } from '@nodelet/volume';
import { isStaticPod } from '../pod-manager.js';
import { ObjectCache } from './object-cache.js';
import { podConfigMapNames, podSecretNames } from './references.js';
import { ServiceCache } from './service-cache.js';
import { TokenManager } from './token-manager.js';

export interface ApiPodObjectsOptions {
  /** The API connection, once the node agent has one. */
  api: () => KubeApi | undefined;
  clock: Clock;
  logger: Logger;
  /** How long a read waits for a newly watched object's first list (upstream: 1 s). */
  syncTimeoutMs?: number;
  /** Watches nobody read for this long stop until the next read (upstream: 5 × syncFrequency). */
  maxIdleMs?: number;
  /** The token renewal jitter's random numbers (tests pass `() => 0`). */
  random?: () => number;
}

/**
 * The API objects of a kubelet joined to a cluster: the ConfigMaps and Secrets its pods reference
 * (each watched by name while a registered pod references it), the Services their environments list,
 * and service-account tokens. `registerPod` is called with each new version of a desired pod and
 * `unregisterPod` when the pod is no longer desired (the pod manager does both).
 */
export class ApiPodObjects implements PodObjects {
  readonly configMaps: ObjectCache<ConfigMap>;
  readonly secrets: ObjectCache<Secret>;
  readonly services: ServiceCache;
  readonly tokens: TokenManager;
  /** The version of each pod whose references are counted, by UID. */
  private readonly registered = new Map<string, Pod>();

  constructor(options: ApiPodObjectsOptions) {
    const common = {
      api: options.api,
      clock: options.clock,
      syncTimeoutMs: options.syncTimeoutMs,
      maxIdleMs: options.maxIdleMs,
    };
    this.configMaps = new ObjectCache<ConfigMap>({
      ...common,
      kind: 'configmap',
      resource: 'configmaps',
      logger: options.logger.child('configmaps'),
    });
    this.secrets = new ObjectCache<Secret>({
      ...common,
      kind: 'secret',
      resource: 'secrets',
      logger: options.logger.child('secrets'),
    });
    this.services = new ServiceCache({ ...common, logger: options.logger.child('services') });
    this.tokens = new TokenManager({
      api: options.api,
      clock: options.clock,
      logger: options.logger.child('tokens'),
      random: options.random,
    });
  }

  /**
   * Counts what this version of the pod references, then releases what its previous version did (in that
   * order, so an object both reference keeps its watch).
   */
  registerPod(pod: Pod): void {
    const uid = pod.metadata!.uid!;
    const previous = this.registered.get(uid);
    this.registered.set(uid, pod);
    this.count(pod, +1);
    if (previous) this.count(previous, -1);
  }

  /** The pod is no longer desired: its references are released and its tokens dropped. */
  unregisterPod(pod: Pod): void {
    const uid = pod.metadata!.uid!;
    const previous = this.registered.get(uid);
    if (!previous) return;
    this.registered.delete(uid);
    this.count(previous, -1);
    this.tokens.deleteServiceAccountToken(uid);
  }

  getConfigMap(namespace: string, name: string): Promise<ConfigMap> {
    return this.configMaps.get(namespace, name);
  }

  getSecret(namespace: string, name: string): Promise<Secret> {
    return this.secrets.get(namespace, name);
  }

  /** A token of the pod's service account, bound to the pod (upstream's projected token source). */
  getServiceAccountToken(pod: Pod, spec: TokenRequestSpec): Promise<TokenRequestStatus> {
    const meta = pod.metadata!;
    return this.tokens.getServiceAccountToken(
      meta.namespace ?? 'default',
      pod.spec?.serviceAccountName || 'default',
      {
        spec: {
          audiences: spec.audiences ?? [],
          ...(spec.expirationSeconds != null ? { expirationSeconds: spec.expirationSeconds } : {}),
          boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: meta.name, uid: meta.uid },
        },
      },
    );
  }

  /** The Services the pod's environment variables come from (see ServiceCache.servicesFor). */
  servicesFor(pod: Pod): Promise<Service[]> {
    return this.services.servicesFor(
      pod.metadata?.namespace ?? 'default',
      pod.spec?.enableServiceLinks !== false,
      isStaticPod(pod),
    );
  }

  stop(): void {
    this.configMaps.stop();
    this.secrets.stop();
    this.services.stop();
  }

  private count(pod: Pod, delta: 1 | -1): void {
    const namespace = pod.metadata?.namespace ?? 'default';
    const adjust = (cache: ObjectCache<ConfigMap> | ObjectCache<Secret>, names: Set<string>) => {
      for (const name of names) {
        if (delta > 0) cache.addReference(namespace, name);
        else cache.deleteReference(namespace, name);
      }
    };
    adjust(this.configMaps, podConfigMapNames(pod));
    adjust(this.secrets, podSecretNames(pod));
    for (const ns of ServiceCache.namespacesOf(namespace, pod.spec?.enableServiceLinks !== false)) {
      if (delta > 0) this.services.addReference(ns);
      else this.services.deleteReference(ns);
    }
  }
}
