import { join } from 'node:path';
import type { Loop } from '@nodelet/kernel';
import { buildAuthorization, type AuthorizationSetup } from './authorization/authorizer-setup.js';
import { defaultAuthorizationModes } from './authorization/modes.js';
import { NodeRestrictionAdmission } from './admission/node-restriction.js';
import { ServiceAccountAdmission } from './admission/service-account.js';
import { DefaultTolerationSecondsAdmission } from './admission/default-toleration-seconds.js';
import { OpenApiDocuments } from './apiserver/openapi.js';
import { Registry } from './apiserver/registry.js';
import { ApiServer, type PodLogProvider } from './apiserver/server.js';
import type { ResourceType } from './apiserver/resource-type.js';
import { EventRecorder } from './controllers/event-recorder.js';
import { EndpointSliceController } from './controllers/endpointslice-controller.js';
import { NamespaceController } from './controllers/namespace-controller.js';
import { Scheduler } from './controllers/scheduler.js';
import { NodeIpamController } from './controllers/node-ipam-controller.js';
import { defaultClusterCidr, defaultNodeCidrMaskSize, NodeCidrSet } from './controllers/node-cidr-set.js';
import { NodeLifecycleController } from './controllers/node-lifecycle-controller.js';
import { TaintEvictionController } from './controllers/taint-eviction-controller.js';
import { PodGarbageCollector } from './controllers/pod-gc-controller.js';
import { ReplicaSetController } from './controllers/replicaset-controller.js';
import { DaemonSetController } from './controllers/daemon-set-controller.js';
import { StatefulSetController } from './controllers/stateful-set-controller.js';
import { DeploymentController } from './controllers/deployment-controller.js';
import { GarbageCollector } from './controllers/garbage-collector.js';
import { DisruptionController } from './controllers/disruption-controller.js';
import { JobController } from './controllers/job-controller.js';
import { CronJobController } from './controllers/cronjob-controller.js';
import { TtlAfterFinishedController } from './controllers/ttl-after-finished-controller.js';
import { Authenticator } from './apiserver/authentication.js';
import { StaticTokens } from './apiserver/token-file.js';
import { ensureServiceAccountKey } from './serviceaccount/signing-key.js';
import { ServiceAccountTokens } from './serviceaccount/tokens.js';
import { KubeletClient } from './apiserver/kubelet-client.js';
import { ResourceMetrics } from './metrics/resource-metrics.js';
import { CsrController } from './controllers/csr-controller.js';
import { ClusterRoleAggregationController } from './controllers/clusterrole-aggregation-controller.js';
import { reconcileBootstrapPolicy } from './authorization/reconcile-bootstrap-policy.js';
import { RbacEscalationAdmission } from './authorization/rbac-escalation-admission.js';
import {
  advertiseAddress,
  ensureBootstrapToken,
  ensureClusterObjects,
  ensureNodeBootstrapBindings,
  ensureSystemNamespaces,
} from './cluster-bootstrap.js';
import { ensureNodeCert, ensurePki, ensureUserCert, writeKubeconfig, type KeyPair, type Pki } from './pki.js';
import { parseCidr, parsePortRange, ServiceAllocator } from './resources/allocators.js';
import { servedResources } from './resources/index.js';
import { RevisionStore } from './storage/revision-store.js';
import { securePrivateDataDir } from './data-dir.js';
import { EncryptionConfig } from './storage/encryption-config.js';
import { openAuditLog, type AuditLog } from './audit/audit-log.js';
import { bodyRead } from './apiserver/request-params.js';
import {
  requestLimits,
  serverVersion,
  type ControlPlaneOptions,
  type Controller,
} from './control-plane-options.js';

export * from './control-plane-options.js';

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
  private metrics?: ResourceMetrics;
  private readonly logProviders = new Map<string, PodLogProvider>();
  private readonly allocator: ServiceAllocator;
  private readonly nodeCidrs: NodeCidrSet;
  private readonly types: ResourceType[];
  private serverUrl = '';
  private housekeeping: Loop[] = [];
  private recorder?: EventRecorder;
  private namespaceController?: NamespaceController;
  private serviceAccountTokens?: ServiceAccountTokens;
  private authorization?: AuthorizationSetup;
  private auditLog?: AuditLog;

  constructor(private readonly options: ControlPlaneOptions) {
    this.dataDir = options.dataDir;
    this.kubeconfigPath = join(options.dataDir, 'kubeconfig');
    this.bootstrapKubeconfigPath = join(options.dataDir, 'bootstrap-kubeconfig');
    this.allocator = new ServiceAllocator(
      parseCidr(options.serviceClusterIPRange ?? '10.96.0.0/12'),
      parsePortRange(options.serviceNodePortRange ?? '30000-32767'),
    );
    this.types = servedResources(this.allocator);
    this.nodeCidrs = new NodeCidrSet(
      options.clusterCidr ?? defaultClusterCidr,
      options.nodeCidrMaskSize ?? defaultNodeCidrMaskSize,
    );
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

  /** The kubelets' resource metrics behind metrics.k8s.io (scraped every 15 s). */
  get resourceMetrics(): ResourceMetrics {
    if (!this.metrics) throw new Error('the control plane is not started');
    return this.metrics;
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

  /** Issues and checks service-account tokens (the TokenRequest and TokenReview APIs use it). */
  get serviceAccounts(): ServiceAccountTokens {
    if (!this.serviceAccountTokens) throw new Error('the control plane is not started');
    return this.serviceAccountTokens;
  }

  get events(): EventRecorder {
    if (!this.recorder) throw new Error('the control plane is not started');
    return this.recorder;
  }

  async start(): Promise<void> {
    try {
      await this.startServing();
    } catch (err) {
      // What started (the store, the listening server) is closed: a failed start leaves nothing open.
      await this.stop();
      throw err;
    }
  }

  private async startServing(): Promise<void> {
    const o = this.options;
    const logger = o.logger;
    // Read before anything opens, so a bad file stops the start with nothing to undo.
    const staticTokens = o.tokenAuthFile ? await StaticTokens.load(o.tokenAuthFile) : undefined;
    const encryption = o.encryptionProviderConfig
      ? await EncryptionConfig.load(o.encryptionProviderConfig)
      : undefined;
    this.auditLog = await openAuditLog(o.audit ?? {}, {
      clock: o.clock,
      logger: logger.child('audit'),
      bodyOf: bodyRead,
    });
    await securePrivateDataDir(this.dataDir, logger);
    const advertise = advertiseAddress(o.bindAddress ?? '127.0.0.1');
    this.pki = await ensurePki(join(this.dataDir, 'pki'), this.allocator.firstIP, undefined, [advertise]);
    const store = new RevisionStore(join(this.dataDir, 'state.db'), {
      ...(o.synchronous ? { synchronous: o.synchronous } : {}),
      onListenerError: (err) => logger.error('watcher failed', { err: String(err) }),
      ...(encryption ? { transformerFor: encryption.forStorage(this.types) } : {}),
    });
    this.storeRef = store;
    const authorization = buildAuthorization(o.authorizationModes ?? defaultAuthorizationModes, store);
    this.authorization = authorization;
    const registry = new Registry({
      store,
      clock: o.clock,
      types: this.types,
      admission: [
        new ServiceAccountAdmission({
          ensureDefaultServiceAccount: (ns) => this.namespaceController?.ensureContents(ns),
        }),
        new NodeRestrictionAdmission(store),
        new DefaultTolerationSecondsAdmission(o.defaultTolerationSeconds),
        ...(authorization.rbac
          ? [new RbacEscalationAdmission(authorization.rbac.resolver, authorization.chain)]
          : []),
      ].filter((plugin) => !o.disableAdmissionPlugins?.includes(plugin.name)),
      ...(o.bookmarkIntervalMs ? { bookmarkIntervalMs: o.bookmarkIntervalMs } : {}),
    });
    this.registryRef = registry;
    this.allocator.reset(store.listAll('services').map((s) => s.object));
    store.subscribe('services', (e) =>
      this.allocator.observe(e.prev, e.op === 'delete' ? undefined : e.object),
    );
    this.recorder = new EventRecorder(registry, o.clock, logger.child('events'), 'nodelet-controlplane');

    const version = serverVersion(o.version);
    const serviceAccounts = new ServiceAccountTokens({
      key: await ensureServiceAccountKey(join(this.dataDir, 'pki')),
      clock: o.clock,
      store,
      ...(o.serviceAccountIssuer ? { issuer: o.serviceAccountIssuer } : {}),
      ...(o.apiAudiences ? { apiAudiences: o.apiAudiences } : {}),
    });
    this.serviceAccountTokens = serviceAccounts;
    const kubelets = new KubeletClient({
      cert: this.pki.kubeletClient.cert,
      key: this.pki.kubeletClient.key,
      ca: this.pki.ca.cert,
    });
    this.metrics = new ResourceMetrics({
      store,
      kubelets,
      clock: o.clock,
      logger: logger.child('metrics'),
      ...(o.metricResolutionMs ? { resolutionMs: o.metricResolutionMs } : {}),
    });
    this.controllers.push(this.metrics);
    // The bootstrap RBAC policy is in place before the server answers anyone.
    ensureSystemNamespaces(registry);
    const rbac = reconcileBootstrapPolicy(registry);
    if (rbac.created.length + rbac.updated.length + rbac.recreated.length > 0)
      logger.info('bootstrap RBAC policy reconciled', {
        created: rbac.created.length,
        updated: rbac.updated,
        recreated: rbac.recreated,
      });
    ensureNodeBootstrapBindings(registry);
    const server = new ApiServer({
      authorizer: authorization.chain,
      authenticator: new Authenticator({
        store,
        clock: o.clock,
        serviceAccounts,
        ...(staticTokens ? { staticTokens } : {}),
        ...(o.anonymousPaths ? { anonymousPaths: o.anonymousPaths } : {}),
      }),
      tokenRequests: {
        store,
        clock: o.clock,
        tokens: serviceAccounts,
        kinds: registry,
        extendExpiration: o.extendTokenExpiration ?? true,
      },
      registry,
      openapi: new OpenApiDocuments(this.types, version.gitVersion),
      clock: o.clock,
      logger: logger.child('apiserver'),
      version,
      tls: { key: this.pki.serving.key, cert: this.pki.serving.cert, ca: this.pki.ca.cert },
      logProviders: this.logProviders,
      kubelets,
      ...requestLimits(o),
      resourceMetrics: this.metrics,
      ...(this.auditLog ? { auditor: this.auditLog.auditor } : {}),
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

    ensureClusterObjects(registry, this.allocator.firstIP, address.port, advertise);
    await ensureBootstrapToken(registry, this.bootstrapKubeconfigPath, this.serverUrl, this.pki.ca.cert);
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
    if (o.controllers?.nodeIpam !== false) {
      const ipamEvents = new EventRecorder(registry, o.clock, logger.child('events'), 'node-ipam-controller');
      const ipam = new NodeIpamController(
        registry,
        this.nodeCidrs,
        o.clock,
        logger.child('node-ipam'),
        ipamEvents,
      );
      this.controllers.push(ipam);
    }
    if (o.controllers?.endpointSlices !== false) {
      this.controllers.push(
        new EndpointSliceController(registry, o.clock, logger.child('endpointslice-controller')),
      );
    }
    if (o.controllers?.workloads !== false) {
      const rsEvents = new EventRecorder(registry, o.clock, logger.child('events'), 'replicaset-controller');
      this.controllers.push(
        new ReplicaSetController(registry, o.clock, logger.child('replicaset-controller'), rsEvents),
      );
      const deployEvents = new EventRecorder(
        registry,
        o.clock,
        logger.child('events'),
        'deployment-controller',
      );
      this.controllers.push(
        new DeploymentController(registry, o.clock, logger.child('deployment-controller'), deployEvents),
      );
      const dsEvents = new EventRecorder(registry, o.clock, logger.child('events'), 'daemonset-controller');
      this.controllers.push(
        new DaemonSetController(registry, o.clock, logger.child('daemonset-controller'), dsEvents),
      );
      const stsEvents = new EventRecorder(
        registry,
        o.clock,
        logger.child('events'),
        'statefulset-controller',
      );
      this.controllers.push(
        new StatefulSetController(registry, o.clock, logger.child('statefulset-controller'), stsEvents),
      );
      const jobEvents = new EventRecorder(registry, o.clock, logger.child('events'), 'job-controller');
      this.controllers.push(new JobController(registry, o.clock, logger.child('job-controller'), jobEvents));
      const cronEvents = new EventRecorder(registry, o.clock, logger.child('events'), 'cronjob-controller');
      this.controllers.push(
        new CronJobController(registry, o.clock, logger.child('cronjob-controller'), cronEvents),
        new TtlAfterFinishedController(registry, o.clock, logger.child('ttl-after-finished-controller')),
      );
      this.controllers.push(new GarbageCollector(registry, o.clock, logger.child('garbage-collector')));
      const pdbEvents = new EventRecorder(registry, o.clock, logger.child('events'), 'controllermanager');
      this.controllers.push(
        new DisruptionController(registry, o.clock, logger.child('disruption-controller'), pdbEvents),
      );
    }
    if (o.controllers?.nodeLifecycle !== false) this.startNodeLifecycle(registry);
    this.controllers.push(
      new CsrController(registry, o.clock, logger.child('csr-controller'), this.pki.ca, authorization.chain),
    );
    this.controllers.push(
      new ClusterRoleAggregationController(
        registry,
        o.clock,
        logger.child('clusterrole-aggregation-controller'),
      ),
    );
    for (const c of this.controllers) c.start();
    this.startHousekeeping();
    logger.info('control plane serving', {
      url: this.serverUrl,
      revision: store.revision,
      kubeconfig: this.kubeconfigPath,
    });
  }

  /** The node lifecycle, taint eviction and pod GC controllers, with their event sources. */
  private startNodeLifecycle(registry: Registry): void {
    const { clock, logger } = this.options;
    const recorder = (component: string) =>
      new EventRecorder(registry, clock, logger.child('events'), component);
    this.controllers.push(
      new NodeLifecycleController(
        registry,
        clock,
        logger.child('node-lifecycle-controller'),
        recorder('node-controller'),
        this.options.nodeLifecycle,
      ),
      new TaintEvictionController(
        registry,
        clock,
        logger.child('taint-eviction-controller'),
        recorder('taint-eviction-controller'),
      ),
      new PodGarbageCollector(registry, clock, logger.child('pod-garbage-collector')),
    );
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
    this.authorization?.close();
    this.authorization = undefined;
    await this.auditLog?.close();
    this.auditLog = undefined;
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

  /**
   * Writes a kubeconfig for `user` (a client certificate with CN `user` and O `groups`) and returns its
   * path: `<dataDir>/users/<user>.kubeconfig`. The user may do what RBAC grants its name and groups.
   */
  async userKubeconfig(user: string, groups: readonly string[] = []): Promise<string> {
    const pair = await this.userCredentials(user, groups);
    const path = join(this.dataDir, 'users', `${user}.kubeconfig`);
    await writeKubeconfig(path, { server: this.serverUrl, ca: this.caCert, client: pair, user });
    return path;
  }

  /** A client certificate and key for `user` (CN) in `groups` (O), signed by the cluster CA. */
  async userCredentials(user: string, groups: readonly string[] = []): Promise<KeyPair> {
    if (!this.pki) throw new Error('the control plane is not started');
    return ensureUserCert(this.pki, user, groups);
  }

  /**
   * Grants `user` a ClusterRole cluster-wide with the ClusterRoleBinding `nodelet:user:<user>` (made or
   * pointed at `clusterRole`), for trying RBAC with `nodelet up --user`.
   */
  bindUser(user: string, clusterRole: string): void {
    const registry = this.registry;
    const name = `nodelet:user:${user}`;
    const binding = {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: clusterRole },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
    };
    const t = registry.byStorage('clusterrolebindings');
    const existing = registry.store.get('clusterrolebindings', '', name)?.object;
    // roleRef cannot change on update: a binding to another role is replaced.
    if (existing && existing.roleRef?.name === clusterRole) return;
    if (existing) registry.forceRemove('clusterrolebindings', '', name);
    registry.create(t, '', binding);
  }

  /** Requests being served now, as the in-flight limits count them (upstream's apiserver_current_inflight_requests). */
  get requestsInFlight(): { readOnly: number; mutating: number } {
    return this.server?.requestsInFlight ?? { readOnly: 0, mutating: 0 };
  }

  /** Ends every open watch; clients watch again from their last resourceVersion. Returns how many ended. */
  closeWatches(): number {
    return this.server?.closeWatches() ?? 0;
  }

  /** Compacts history up to the newest revision (or `rev`): watches from before it get 410 Gone. */
  compact(rev?: number): number {
    return this.store.compact(rev ?? this.store.revision);
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
