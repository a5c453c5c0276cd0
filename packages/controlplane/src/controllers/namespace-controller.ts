import type { Clock, Logger } from '@nodelet/kernel';
import type { Registry } from '../apiserver/registry.js';
import { ApiError } from '../apiserver/status.js';
import { WorkQueue } from './work-queue.js';

/**
 * Namespaces and what every namespace holds:
 *
 * - a namespace being deleted (Terminating) has its content deleted — pods gracefully, so their kubelets
 *   stop them — and is removed once nothing is left (upstream's namespace controller);
 * - every active namespace has a `default` ServiceAccount (the serviceaccount controller) and the
 *   `kube-root-ca.crt` ConfigMap with the cluster CA (the root-CA publisher).
 */
export class NamespaceController {
  private readonly queue: WorkQueue;
  private readonly unsubscribe: (() => void)[] = [];

  constructor(
    private readonly registry: Registry,
    clock: Clock,
    private readonly logger: Logger,
    private readonly caCert: string,
    private readonly retryMs = 1000,
  ) {
    this.queue = new WorkQueue('namespace', (ns) => this.sync(ns), clock, logger);
  }

  start(): void {
    const store = this.registry.store;
    this.unsubscribe.push(
      store.subscribe('namespaces', (e) => this.queue.add(e.name)),
      store.subscribe('serviceaccounts', (e) => {
        if (e.op === 'delete' && e.name === 'default') this.queue.add(e.namespace);
      }),
      store.subscribe('configmaps', (e) => {
        if (e.name === 'kube-root-ca.crt') this.queue.add(e.namespace);
      }),
    );
    for (const ns of store.listAll('namespaces')) this.queue.add(ns.object.metadata.name!);
  }

  stop(): void {
    for (const u of this.unsubscribe.splice(0)) u();
    this.queue.stop();
  }

  /**
   * Makes what an active namespace holds now, without waiting for the queue: the ServiceAccount
   * admission step calls it for a pod created right after its namespace.
   */
  ensureContents(name: string): void {
    const ns = this.registry.store.get('namespaces', '', name)?.object;
    if (ns && !ns.metadata.deletionTimestamp) this.sync(name);
  }

  private sync(name: string): void {
    const ns = this.registry.store.get('namespaces', '', name)?.object;
    if (!ns) return;
    if (ns.metadata.deletionTimestamp) return this.finalize(name);
    this.ensure('serviceaccounts', name, 'default', {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: 'default' },
    });
    const cm = this.registry.store.get('configmaps', name, 'kube-root-ca.crt')?.object;
    if (!cm) {
      this.ensure('configmaps', name, 'kube-root-ca.crt', {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: {
          name: 'kube-root-ca.crt',
          annotations: {
            'kubernetes.io/description':
              'Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.',
          },
        },
        data: { 'ca.crt': this.caCert },
      });
    } else if (cm.data?.['ca.crt'] !== this.caCert) {
      this.registry.store.update('configmaps', name, 'kube-root-ca.crt', (c) => ({
        ...c,
        data: { 'ca.crt': this.caCert },
      }));
    }
  }

  private ensure(storage: string, namespace: string, name: string, body: object): void {
    if (this.registry.store.get(storage, namespace, name)) return;
    try {
      this.registry.create(this.registry.byStorage(storage), namespace, body);
    } catch (err) {
      if (err instanceof ApiError && (err.code === 409 || err.code === 403 || err.code === 404)) return;
      throw err;
    }
  }

  /** Deletes what the namespace holds; removes the namespace once it is empty. */
  private finalize(name: string): void {
    const storages = [...new Set(this.registry.types.filter((t) => t.namespaced).map((t) => t.storage))];
    let left = 0;
    for (const storage of storages) {
      const t = this.registry.byStorage(storage);
      for (const item of this.registry.store.listAll(storage, name)) {
        left++;
        try {
          this.registry.delete(t, name, item.object.metadata.name!, { propagationPolicy: 'Background' });
        } catch (err) {
          if (!(err instanceof ApiError && err.code === 404)) throw err;
        }
      }
    }
    const remaining = storages.reduce((n, s) => n + this.registry.store.count(s, name), 0);
    if (remaining === 0) {
      this.registry.forceRemove('namespaces', '', name);
      this.logger.info('namespace removed', { namespace: name, deleted: left });
    } else {
      this.queue.addAfter(name, this.retryMs);
    }
  }
}
