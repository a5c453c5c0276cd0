import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Clock, Logger, Loop } from '@nodelet/kernel';
import { NodeRestrictionAdmission } from './admission/node-restriction.js';
import { ServiceAccountAdmission } from './admission/service-account.js';
import { OpenApiDocuments } from './apiserver/openapi.js';
import { Registry } from './apiserver/registry.js';
import { ApiServer, type PodLogProvider, type ServerVersion } from './apiserver/server.js';
import { ApiError } from './apiserver/status.js';
import type { ResourceType } from './apiserver/resource-type.js';
import { EventRecorder } from './controllers/event-recorder.js';
import { EndpointSliceController } from './controllers/endpointslice-controller.js';
import { NamespaceController } from './controllers/namespace-controller.js';
import { Scheduler } from './controllers/scheduler.js';
import { bootstrapTokenSecretType } from './apiserver/authentication.js';
import { CsrController } from './controllers/csr-controller.js';
import {
  ensureNodeCert,
  ensurePki,
  readBootstrapToken,
  writeKubeconfig,
  writeTokenKubeconfig,
  type KeyPair,
  type Pki,
} from './pki.js';
import { parseCidr, parsePortRange, ServiceAllocator } from './resources/allocators.js';
import { servedResources } from './resources/index.js';
import { RevisionStore } from './storage/revision-store.js';
import type { KubeObject } from './object.js';

/**
 * The embedded control plane: the revision store, the API server on HTTPS, and the controllers a node
 * cluster needs, in one object with a start and a stop. `nodelet up` hosts it as the `controlplane`
 * plugin; tests and embedders may construct it directly.
 */
export interface ControlPlaneOptions {
  /** State: `state.db` (SQLite), `pki/`, `kubeconfig`. */
  dataDir: string;
  clock: Clock;
  logger: Logger;
  /** HTTPS port; 0 picks a free one (default 6443). */
  port?: number;
  /** Address to bind (default 127.0.0.1). */
  bindAddress?: string;
  /** ClusterIP range (default 10.96.0.0/12). */
  serviceClusterIPRange?: string;
  /** NodePort range (default 30000-32767). */
  serviceNodePortRange?: string;
  /** Run the in-process controllers (default true). */
  controllers?: { scheduler?: boolean; endpointSlices?: boolean };
  /** Every `intervalMs`, history older than the newest `retainRevisions` revisions is compacted. */
  compaction?: { intervalMs?: number; retainRevisions?: number };
  /** How long Events live (default 1 h). */
  eventTtlMs?: number;
  bookmarkIntervalMs?: number;
  /** SQLite `synchronous`: NORMAL (default) or FULL. */
  synchronous?: 'NORMAL' | 'FULL';
  /** Extra controllers and hooks: called after the server is up (issue 6 adds the kubelet here). */
  version?: string;
}

export interface Controller {
  start(): void;
  stop(): void;
}

/** The Kubernetes version nodelet's API matches (its schemas are @kubernetes/client-node's, v1.34). */
export const kubernetesVersion = { major: '1', minor: '34', gitVersion: 'v1.34.0' };

export class ControlPlane {
  readonly dataDir: string;
  readonly kubeconfigPath: string;
  /** A kubeconfig with this cluster's bootstrap token, for kubelets that join by TLS bootstrapping. */
  readonly bootstrapKubeconfigPath: string;
  private storeRef?: RevisionStore;
  private registryRef?: Registry;
  private server?: ApiServer;
  private pki?: Pki;
  private readonly controllers: Controller[] = [];
  private readonly logProviders = new Map<string, PodLogProvider>();
  private readonly allocator: ServiceAllocator;
  private readonly types: ResourceType[];
  private serverUrl = '';
  private housekeeping: Loop[] = [];
  private recorder?: EventRecorder;
  private namespaceController?: NamespaceController;

  constructor(private readonly options: ControlPlaneOptions) {
    this.dataDir = options.dataDir;
    this.kubeconfigPath = join(options.dataDir, 'kubeconfig');
    this.bootstrapKubeconfigPath = join(options.dataDir, 'bootstrap-kubeconfig');
    this.allocator = new ServiceAllocator(
      parseCidr(options.serviceClusterIPRange ?? '10.96.0.0/12'),
      parsePortRange(options.serviceNodePortRange ?? '30000-32767'),
    );
    this.types = servedResources(this.allocator);
  }

  /** `https://127.0.0.1:<port>`, once started. */
  get url(): string {
    return this.serverUrl;
  }

  get registry(): Registry {
    if (!this.registryRef) throw new Error('the control plane is not started');
    return this.registryRef;
  }

  get store(): RevisionStore {
    if (!this.storeRef) throw new Error('the control plane is not started');
    return this.storeRef;
  }

  /** The CA certificate (PEM) clients trust. */
  get caCert(): string {
    if (!this.pki) throw new Error('the control plane is not started');
    return this.pki.ca.cert;
  }

  /** The admin's client certificate and key (PEM), for in-process clients that use the admin identity. */
  get adminCredentials(): KeyPair {
    if (!this.pki) throw new Error('the control plane is not started');
    return this.pki.admin;
  }

  get events(): EventRecorder {
    if (!this.recorder) throw new Error('the control plane is not started');
    return this.recorder;
  }

  async start(): Promise<void> {
    const o = this.options;
    const logger = o.logger;
    await mkdir(this.dataDir, { recursive: true, mode: 0o700 });
    this.pki = await ensurePki(join(this.dataDir, 'pki'), this.allocator.firstIP);
    const store = new RevisionStore(join(this.dataDir, 'state.db'), {
      ...(o.synchronous ? { synchronous: o.synchronous } : {}),
      onListenerError: (err) => logger.error('watcher failed', { err: String(err) }),
    });
    this.storeRef = store;
    const registry = new Registry({
      store,
      clock: o.clock,
      types: this.types,
      admission: [
        new ServiceAccountAdmission({
          ensureDefaultServiceAccount: (ns) => this.namespaceController?.ensureContents(ns),
        }),
        new NodeRestrictionAdmission(),
      ],
      ...(o.bookmarkIntervalMs ? { bookmarkIntervalMs: o.bookmarkIntervalMs } : {}),
    });
    this.registryRef = registry;
    this.allocator.reset(store.listAll('services').map((s) => s.object));
    store.subscribe('services', (e) =>
      this.allocator.observe(e.prev, e.op === 'delete' ? undefined : e.object),
    );
    this.recorder = new EventRecorder(registry, o.clock, logger.child('events'), 'nodelet-controlplane');

    const version: ServerVersion = {
      ...kubernetesVersion,
      gitVersion: `${kubernetesVersion.gitVersion}+nodelet-${o.version ?? '0.1.0'}`,
      gitCommit: '',
      gitTreeState: 'clean',
      buildDate: '1970-01-01T00:00:00Z',
      goVersion: `node ${process.version}`,
      compiler: 'nodelet',
      platform: `${process.platform}/${process.arch === 'x64' ? 'amd64' : process.arch}`,
    };
    const server = new ApiServer({
      registry,
      openapi: new OpenApiDocuments(this.types, version.gitVersion),
      clock: o.clock,
      logger: logger.child('apiserver'),
      version,
      tls: { key: this.pki.serving.key, cert: this.pki.serving.cert, ca: this.pki.ca.cert },
      logProviders: this.logProviders,
    });
    const address = await server.listen(o.port ?? 6443, o.bindAddress ?? '127.0.0.1');
    this.server = server;
    const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
    this.serverUrl = `https://${host}:${address.port}`;
    await writeKubeconfig(this.kubeconfigPath, {
      server: this.serverUrl,
      ca: this.pki.ca.cert,
      client: this.pki.admin,
      user: 'nodelet-admin',
    });

    this.bootstrap(address.port);
    await this.ensureBootstrapToken();
    this.namespaceController = new NamespaceController(
      registry,
      o.clock,
      logger.child('namespace-controller'),
      this.pki.ca.cert,
    );
    this.controllers.push(this.namespaceController);
    if (o.controllers?.scheduler !== false) {
      const schedulerEvents = new EventRecorder(
        registry,
        o.clock,
        logger.child('events'),
        'default-scheduler',
      );
      this.controllers.push(new Scheduler(registry, o.clock, logger.child('scheduler'), schedulerEvents));
    }
    if (o.controllers?.endpointSlices !== false) {
      this.controllers.push(
        new EndpointSliceController(registry, o.clock, logger.child('endpointslice-controller')),
      );
    }
    this.controllers.push(new CsrController(registry, o.clock, logger.child('csr-controller'), this.pki.ca));
    for (const c of this.controllers) c.start();
    this.startHousekeeping();
    logger.info('control plane serving', {
      url: this.serverUrl,
      revision: store.revision,
      kubeconfig: this.kubeconfigPath,
    });
  }

  /** Adds an in-process controller, started now if the control plane runs. */
  addController(controller: Controller): void {
    this.controllers.push(controller);
    if (this.server) controller.start();
  }

  async stop(): Promise<void> {
    for (const loop of this.housekeeping.splice(0)) loop.stop();
    for (const c of this.controllers.splice(0).reverse()) c.stop();
    this.namespaceController = undefined;
    await this.server?.close();
    this.server = undefined;
    this.storeRef?.close();
    this.storeRef = undefined;
    this.registryRef = undefined;
  }

  /** Registers the `pods/log` provider of a node's kubelet; returns the function that removes it. */
  registerLogProvider(node: string, provider: PodLogProvider): () => void {
    this.logProviders.set(node, provider);
    return () => {
      if (this.logProviders.get(node) === provider) this.logProviders.delete(node);
    };
  }

  /**
   * Writes a kubeconfig for a node's kubelet (client certificate `system:node:<node>`) and returns its
   * path: `<dataDir>/nodes/<node>/kubeconfig`.
   */
  async nodeKubeconfig(node: string): Promise<string> {
    if (!this.pki) throw new Error('the control plane is not started');
    const pair = await ensureNodeCert(this.pki, node);
    const path = join(this.dataDir, 'nodes', node, 'kubeconfig');
    await writeKubeconfig(path, {
      server: this.serverUrl,
      ca: this.pki.ca.cert,
      client: pair,
      user: `system:node:${node}`,
    });
    return path;
  }

  /** Ends every open watch; clients watch again from their last resourceVersion. Returns how many ended. */
  closeWatches(): number {
    return this.server?.closeWatches() ?? 0;
  }

  /** Compacts history up to the newest revision (or `rev`): watches from before it get 410 Gone. */
  compact(rev?: number): number {
    return this.store.compact(rev ?? this.store.revision);
  }

  /** The namespaces every cluster has, and the `kubernetes` Service pointing at this server. */
  private bootstrap(port: number): void {
    const registry = this.registry;
    const namespaces = registry.byStorage('namespaces');
    for (const name of ['default', 'kube-system', 'kube-public', 'kube-node-lease']) {
      if (!registry.store.get('namespaces', '', name)) {
        registry.create(namespaces, '', { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
      }
    }
    const services = registry.byStorage('services');
    const desiredPorts = [{ name: 'https', port: 443, protocol: 'TCP', targetPort: port }];
    const svc = registry.store.get('services', 'default', 'kubernetes')?.object;
    if (!svc) {
      registry.create(services, 'default', {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'kubernetes', labels: { component: 'apiserver', provider: 'kubernetes' } },
        spec: {
          type: 'ClusterIP',
          clusterIP: this.allocator.firstIP,
          ports: desiredPorts,
          sessionAffinity: 'None',
        },
      });
    } else if (svc.spec?.ports?.[0]?.targetPort !== port) {
      registry.store.update('services', 'default', 'kubernetes', (s) => {
        s.spec.ports = desiredPorts;
        return s;
      });
    }
    const slices = registry.byStorage('endpointslices');
    const slice: KubeObject = {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: {
        name: 'kubernetes',
        namespace: 'default',
        labels: { 'kubernetes.io/service-name': 'kubernetes' },
      },
      addressType: 'IPv4',
      endpoints: [{ addresses: ['127.0.0.1'], conditions: { ready: true } }],
      ports: [{ name: 'https', port, protocol: 'TCP' }],
    };
    const existing = registry.store.get('endpointslices', 'default', 'kubernetes')?.object;
    try {
      if (!existing) registry.create(slices, 'default', slice);
      else if (existing.ports?.[0]?.port !== port) {
        registry.store.update('endpointslices', 'default', 'kubernetes', (e) => ({
          ...e,
          ports: slice.ports,
          endpoints: slice.endpoints,
        }));
      }
    } catch (err) {
      if (!(err instanceof ApiError && err.code === 409)) throw err;
    }
  }

  /**
   * One bootstrap token (a `bootstrap-token-<id>` Secret in kube-system, as `kubeadm token create` makes)
   * and `<dataDir>/bootstrap-kubeconfig` holding it: a kubelet given that file as
   * `--bootstrap-kubeconfig` asks for its client certificate, which the CSR controller approves and
   * signs. The token is kept across restarts while its Secret exists; it does not expire (delete the
   * Secret to revoke it, and a new one is made at the next start).
   */
  private async ensureBootstrapToken(): Promise<void> {
    const store = this.registry.store;
    let token = await readBootstrapToken(this.bootstrapKubeconfigPath);
    const id = token?.split('.')[0];
    if (!token || !id || !store.get('secrets', 'kube-system', `bootstrap-token-${id}`)) {
      const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
      const random = (n: number) => [...randomBytes(n)].map((b) => alphabet[b % alphabet.length]).join('');
      token = `${random(6)}.${random(16)}`;
      const [newId, secret] = token.split('.') as [string, string];
      const b64 = (v: string) => Buffer.from(v).toString('base64');
      this.registry.create(this.registry.byStorage('secrets'), 'kube-system', {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: `bootstrap-token-${newId}` },
        type: bootstrapTokenSecretType,
        data: {
          description: b64('made by nodelet up for kubelets joining by TLS bootstrapping'),
          'token-id': b64(newId),
          'token-secret': b64(secret),
          'usage-bootstrap-authentication': b64('true'),
          'usage-bootstrap-signing': b64('true'),
          'auth-extra-groups': b64('system:bootstrappers:nodelet:default-node-token'),
        },
      });
    }
    await writeTokenKubeconfig(this.bootstrapKubeconfigPath, {
      server: this.serverUrl,
      ca: this.caCert,
      token,
      user: 'kubelet-bootstrap',
    });
  }

  private startHousekeeping(): void {
    const o = this.options;
    const clock = o.clock;
    const compactEvery = o.compaction?.intervalMs ?? 5 * 60_000;
    const retain = o.compaction?.retainRevisions ?? 10_000;
    const ttl = o.eventTtlMs ?? 60 * 60_000;
    const compact = clock.loop(
      () => {
        const store = this.storeRef;
        if (!store) return compact.stop();
        const target = store.revision - retain;
        if (target > store.compactRevision) {
          const removed = store.compact(target);
          o.logger.debug('compacted', { revision: target, rowsRemoved: removed });
        }
      },
      { period: compactEvery, initialDelay: compactEvery },
    );
    const eventEvery = Math.min(ttl, 10 * 60_000);
    const expireEvents = clock.loop(
      () => {
        const store = this.storeRef;
        if (!store) return expireEvents.stop();
        const cutoff = clock.now() - ttl;
        for (const { object: e } of store.listAll('events')) {
          const last = Date.parse(e.lastTimestamp ?? e.eventTime ?? e.metadata.creationTimestamp ?? '');
          if (!Number.isNaN(last) && last < cutoff)
            this.registry.forceRemove('events', e.metadata.namespace ?? '', e.metadata.name!);
        }
      },
      { period: eventEvery, initialDelay: eventEvery },
    );
    this.housekeeping = [compact, expireEvents];
  }
}
