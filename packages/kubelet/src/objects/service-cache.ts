import type { Service } from '@nodelet/api';
import { type ListWatchApi, namespaceServicesListWatcher } from '@nodelet/client';
import type { Clock, Logger } from '@nodelet/kernel';
import { ReferencedWatch } from './watch.js';

/** Where the `kubernetes` Service lives: every pod's environment has it. */
const masterNamespace = 'default';

export interface ServiceCacheOptions {
  api: () => ListWatchApi | undefined;
  clock: Clock;
  logger: Logger;
  /** How long building an API pod's environment waits for a namespace's first list (default 1 s). */
  syncTimeoutMs?: number;
}

/**
 * The Services the node's pods see as environment variables (upstream's service lister, narrowed to
 * the namespaces that matter): `default`, for the `kubernetes` Service every pod gets, and the
 * namespace of each pod with `enableServiceLinks`, each watched while a pod needs it.
 */
export class ServiceCache {
  private readonly namespaces = new Map<string, ReferencedWatch<Service>>();
  private readonly syncTimeoutMs: number;

  constructor(private readonly options: ServiceCacheOptions) {
    this.syncTimeoutMs = options.syncTimeoutMs ?? 1_000;
  }

  /** The namespaces a pod's environment reads Services of. */
  static namespacesOf(namespace: string, enableServiceLinks: boolean): string[] {
    return enableServiceLinks && namespace !== masterNamespace
      ? [masterNamespace, namespace]
      : [masterNamespace];
  }

  addReference(namespace: string): void {
    let watch = this.namespaces.get(namespace);
    if (!watch) {
      const { api, clock, logger } = this.options;
      watch = new ReferencedWatch<Service>(
        `services of namespace ${namespace}`,
        () => {
          const connection = api();
          return connection && namespaceServicesListWatcher<Service>(connection, namespace);
        },
        clock,
        logger,
      );
      this.namespaces.set(namespace, watch);
    }
    watch.refs++;
    watch.start();
  }

  deleteReference(namespace: string): void {
    const watch = this.namespaces.get(namespace);
    if (!watch || --watch.refs > 0) return;
    watch.stop();
    this.namespaces.delete(namespace);
  }

  /**
   * The Services of `default` and (with service links) of the pod's namespace. An API pod waits for
   * them to be listed (bounded; then upstream's "services have not yet been read at least once"); a
   * static pod takes what is known, as upstream.
   */
  async servicesFor(namespace: string, enableServiceLinks: boolean, isStatic: boolean): Promise<Service[]> {
    const out: Service[] = [];
    for (const ns of ServiceCache.namespacesOf(namespace, enableServiceLinks)) {
      const watch = this.namespaces.get(ns);
      // Started here too: a pod registered before the API connection existed had nothing to start it.
      const started = watch?.start() ?? false;
      if (!isStatic) {
        if (!started) throw notYetRead();
        try {
          await watch!.waitSynced(this.syncTimeoutMs, 'services');
        } catch {
          throw notYetRead();
        }
      }
      if (watch) out.push(...watch.values());
    }
    return out;
  }

  stop(): void {
    for (const watch of this.namespaces.values()) watch.stop();
    this.namespaces.clear();
  }
}

const notYetRead = () => new Error('services have not yet been read at least once, cannot construct envvars');
