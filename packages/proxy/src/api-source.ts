import { existsSync } from 'node:fs';
import * as k8s from '@kubernetes/client-node';
import { type Clock, errorMessage, type Logger } from '@nodelet/kernel';
import type { EndpointSlice, Service } from './objects.js';
import type { ProxySource, ProxySourceHandler } from './source.js';

/** A Service with this label belongs to another proxy (upstream `LabelServiceProxyName`). */
export const SERVICE_PROXY_NAME_LABEL = 'service.kubernetes.io/service-proxy-name';
/** EndpointSlices of headless Services carry this label (upstream `IsHeadlessService`). */
export const HEADLESS_LABEL = 'service.kubernetes.io/headless';
/** What upstream kube-proxy lists and watches Services and EndpointSlices with. */
export const PROXY_LABEL_SELECTOR = `!${SERVICE_PROXY_NAME_LABEL},!${HEADLESS_LABEL}`;
/** The node labels topology-aware routing reads (`topology.kubernetes.io/zone`, `…/region`). */
const TOPOLOGY_PREFIX = 'topology.kubernetes.io/';

export interface ApiSourceOptions {
  kubeConfig: k8s.KubeConfig;
  clock: Clock;
  logger: Logger;
  /** This node: its Node object's topology labels are handed to the proxy. Optional. */
  nodeName?: string;
  /** First wait after a failed list or watch; doubles up to `maxBackoffMs` (upstream 800 ms / 30 s). */
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  /** A list that does not answer in this long fails (and is retried). Default 30 s. */
  requestTimeoutMs?: number;
  /** Server-side watch timeout; the watch is then resumed from the last resource version. Default 5–10 min. */
  watchTimeoutSeconds?: number;
}

/**
 * Reads a kubeconfig the way upstream's `--kubeconfig` / `--master` do (`BuildConfigFromFlags`): the file's
 * current context, with `master` replacing its server; `master` alone is a server without credentials.
 * Errors name the file and what to fix.
 */
export function loadProxyKubeConfig(options: { kubeconfig?: string; master?: string }): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  const { kubeconfig, master } = options;
  if (master !== undefined) {
    try {
      const url = new URL(master);
      if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new Error('not http(s)');
    } catch {
      throw new Error(`--master ${JSON.stringify(master)} is not a URL; write it like https://10.0.0.1:6443`);
    }
  }
  if (kubeconfig) {
    if (!existsSync(kubeconfig)) throw new Error(`kubeconfig ${kubeconfig}: no such file`);
    try {
      kc.loadFromFile(kubeconfig);
    } catch (err) {
      throw new Error(`kubeconfig ${kubeconfig} could not be loaded: ${errorMessage(err).split('\n')[0]}`);
    }
    const cluster = kc.getCurrentCluster();
    if (!cluster) {
      throw new Error(
        `kubeconfig ${kubeconfig} has no current cluster: set current-context to a context whose cluster exists`,
      );
    }
    if (master !== undefined) {
      kc.clusters = kc.clusters.map((c) => (c.name === cluster.name ? { ...c, server: master } : c));
    } else if (!cluster.server) {
      throw new Error(`kubeconfig ${kubeconfig}: cluster ${JSON.stringify(cluster.name)} has no server`);
    }
    return kc;
  }
  if (master === undefined) throw new Error('the API source needs a kubeconfig or a master URL');
  // client-node refuses plain http unless told TLS is not verified: there is no TLS to verify then.
  const plainHttp = new URL(master).protocol === 'http:';
  kc.loadFromClusterAndUser(
    { name: 'master', server: master, skipTLSVerify: plainHttp },
    { name: 'anonymous' },
  );
  return kc;
}

type Kind = 'Service' | 'EndpointSlice' | 'Node';

interface Informed {
  kind: Kind;
  informer: k8s.ListWatch<k8s.KubernetesObject>;
  watch: ResumingWatch;
  /** Lists done (the first one, and relists after 410 Gone or a failure). */
  lists: number;
  /** Its initial list has been handed to the proxy. */
  listed: boolean;
  backoffMs: number;
  cancelRetry?: () => void;
}

/**
 * Services and EndpointSlices from the API server (upstream kube-proxy's informers), through
 * @kubernetes/client-node's `ListWatch`: list, then watch from the list's resource version with
 * bookmarks; 410 Gone lists again; a failed list or watch is retried after a backoff (800 ms doubling to
 * 30 s). Services and slices that belong to another proxy (`service.kubernetes.io/service-proxy-name`) or
 * to headless Services (`service.kubernetes.io/headless`) are filtered out by label selector, as
 * upstream does, and again here for servers that ignore it. `synced` is called once both initial lists
 * are delivered.
 *
 * With `nodeName`, this node's Node object is watched too and its topology labels are handed to the
 * proxy (`nodeLabels`), for topology-aware routing.
 *
 * Objects are handed on as the server sent them; the proxy's change tracker checks each one and refuses
 * a bad one (a port out of range, an address that is not an IP) with one log line, keeping the rules of
 * its last good version.
 */
export class ApiSource implements ProxySource {
  readonly name = 'api';
  private readonly informers: Informed[] = [];
  private handler: ProxySourceHandler | undefined;
  private running = false;
  private synced = false;
  private nodeLabelsJson: string | undefined;
  private readonly initialBackoff: number;
  private readonly maxBackoff: number;

  constructor(private readonly options: ApiSourceOptions) {
    this.initialBackoff = options.initialBackoffMs ?? 800;
    this.maxBackoff = options.maxBackoffMs ?? 30_000;
  }

  /** The API server address, for messages. */
  get server(): string {
    return this.options.kubeConfig.getCurrentCluster()?.server ?? '';
  }

  /** Lists done so far, per kind (relists after 410 Gone and failures included). */
  get lists(): Record<Kind, number> {
    const out: Record<Kind, number> = { Service: 0, EndpointSlice: 0, Node: 0 };
    for (const i of this.informers) out[i.kind] = i.lists;
    return out;
  }

  /** The resource version the watch of a kind resumes from ('' before its first list). */
  resourceVersion(kind: Kind): string {
    return this.informers.find((i) => i.kind === kind)?.informer.latestResourceVersion() ?? '';
  }

  async start(handler: ProxySourceHandler): Promise<void> {
    if (this.running) return;
    this.running = true;
    this.handler = handler;
    const kc = this.options.kubeConfig;
    const core = kc.makeApiClient(k8s.CoreV1Api);
    const discovery = kc.makeApiClient(k8s.DiscoveryV1Api);
    const options = this.requestOptions();
    const labelSelector = PROXY_LABEL_SELECTOR;
    this.add('Service', '/api/v1/services', labelSelector, undefined, () =>
      core.listServiceForAllNamespaces({ labelSelector }, options),
    );
    this.add('EndpointSlice', '/apis/discovery.k8s.io/v1/endpointslices', labelSelector, undefined, () =>
      discovery.listEndpointSliceForAllNamespaces({ labelSelector }, options),
    );
    const node = this.options.nodeName;
    if (node) {
      const fieldSelector = `metadata.name=${node}`;
      this.add('Node', '/api/v1/nodes', undefined, fieldSelector, () =>
        core.listNode({ fieldSelector }, options),
      );
    }
    this.options.logger.info('watching Services and EndpointSlices', {
      server: this.server,
      labelSelector,
      ...(node ? { node } : {}),
    });
    // Each informer lists and starts watching on its own; a failure is retried by its error handler.
    for (const i of this.informers) void this.startInformer(i);
  }

  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    for (const i of this.informers) {
      i.cancelRetry?.();
      i.watch.stop();
      await i.informer.stop();
    }
    this.informers.length = 0;
    this.handler = undefined;
    // A later start lists afresh and says `synced` again.
    this.synced = false;
    this.nodeLabelsJson = undefined;
  }

  private add(
    kind: Kind,
    path: string,
    labelSelector: string | undefined,
    fieldSelector: string | undefined,
    list: () => Promise<unknown>,
  ): void {
    const entry: Informed = {
      kind,
      lists: 0,
      listed: false,
      backoffMs: this.initialBackoff,
      informer: undefined as unknown as Informed['informer'],
      watch: undefined as unknown as Informed['watch'],
    };
    const listFn = async () => {
      const result = plain(await list()) as k8s.KubernetesListObject<k8s.KubernetesObject>;
      entry.lists++;
      entry.backoffMs = this.initialBackoff;
      return result;
    };
    const watch = new ResumingWatch(this.options.kubeConfig, {
      clock: this.options.clock,
      timeoutSeconds: () => this.options.watchTimeoutSeconds ?? 300 + Math.floor(Math.random() * 300),
      // ListWatch watches right after it delivered a list: the list is in the proxy by now.
      beforeWatch: () => this.listed(entry),
      // A watch that delivers is healthy again: the next failure starts from the first wait.
      delivered: () => (entry.backoffMs = this.initialBackoff),
      pause: () => (this.running ? this.nextBackoff(entry) : -1),
      running: () => this.running,
    });
    entry.watch = watch;
    entry.informer = new k8s.ListWatch(path, watch, listFn, false, labelSelector, fieldSelector);
    entry.informer.on('add', (o) => this.deliver(kind, o, false));
    entry.informer.on('update', (o) => this.deliver(kind, o, false));
    entry.informer.on('delete', (o) => this.deliver(kind, o, true));
    entry.informer.on('error', (err) => this.failed(entry, err));
    this.informers.push(entry);
  }

  private async startInformer(entry: Informed): Promise<void> {
    if (!this.running) return;
    try {
      await entry.informer.start();
    } catch (err) {
      this.failed(entry, err);
    }
  }

  /** A list or watch failed (not 410 Gone, which ListWatch handles by listing again): retry later. */
  private failed(entry: Informed, err: unknown): void {
    if (!this.running) return;
    const wait = this.nextBackoff(entry);
    this.options.logger.warn(`listing or watching ${entry.kind}s failed; retrying`, {
      server: this.server,
      retryAfterMs: wait,
      err: describeError(err),
    });
    entry.cancelRetry?.();
    entry.cancelRetry = this.options.clock.setTimeout(() => {
      entry.cancelRetry = undefined;
      void this.startInformer(entry);
    }, wait);
  }

  private nextBackoff(entry: Informed): number {
    const wait = entry.backoffMs;
    entry.backoffMs = Math.min(entry.backoffMs * 2, this.maxBackoff);
    return wait;
  }

  private listed(entry: Informed): void {
    if (entry.listed) return;
    entry.listed = true;
    const needed = this.informers.filter((i) => i.kind !== 'Node');
    if (!this.synced && needed.every((i) => i.listed)) {
      this.synced = true;
      this.options.logger.info('Services and EndpointSlices listed', {
        services: this.informers.find((i) => i.kind === 'Service')?.informer.list().length ?? 0,
        endpointSlices: this.informers.find((i) => i.kind === 'EndpointSlice')?.informer.list().length ?? 0,
      });
      this.handler?.synced();
    }
  }

  private deliver(kind: Kind, obj: k8s.KubernetesObject, deleted: boolean): void {
    const handler = this.handler;
    if (!handler || !this.running) return;
    if (kind === 'Node') {
      if (!deleted) this.nodeLabels(obj.metadata?.labels ?? {});
      return;
    }
    const labels = obj.metadata?.labels ?? {};
    // A server that ignores the label selector, or an object relabelled while watched: not ours.
    const excluded = SERVICE_PROXY_NAME_LABEL in labels || HEADLESS_LABEL in labels;
    const object = { ...obj, kind } as Service | EndpointSlice;
    if (kind === 'Service') {
      if (deleted || excluded) handler.deleteService(object as Service);
      else handler.upsertService(object as Service);
    } else if (deleted || excluded) handler.deleteEndpointSlice(object as EndpointSlice);
    else handler.upsertEndpointSlice(object as EndpointSlice);
  }

  private nodeLabels(all: Record<string, string>): void {
    const labels: Record<string, string> = {};
    for (const key of Object.keys(all).sort()) if (key.startsWith(TOPOLOGY_PREFIX)) labels[key] = all[key]!;
    const json = JSON.stringify(labels);
    // Node status updates every few seconds; only a change of its topology labels matters.
    if (json === this.nodeLabelsJson) return;
    const first = this.nodeLabelsJson === undefined;
    this.nodeLabelsJson = json;
    this.options.logger[first && json === '{}' ? 'debug' : 'info']('node topology labels', {
      node: this.options.nodeName,
      labels: json,
    });
    this.handler?.nodeLabels?.(labels);
  }

  /** A timeout on every list request (watches are long-lived and bounded by timeoutSeconds instead). */
  private requestOptions(): k8s.ConfigurationOptions {
    const timeoutMs = this.options.requestTimeoutMs ?? 30_000;
    return {
      middleware: [
        {
          pre: (ctx: k8s.RequestContext) => {
            ctx.setSignal(AbortSignal.timeout(timeoutMs));
            return new k8s.Observable(Promise.resolve(ctx));
          },
          post: (res: k8s.ResponseContext) => new k8s.Observable(Promise.resolve(res)),
        } as unknown as k8s.ObservableMiddleware,
      ],
      middlewareMergeStrategy: 'append',
    } as k8s.ConfigurationOptions;
  }
}

interface ResumingWatchHooks {
  clock: Clock;
  timeoutSeconds(): number;
  beforeWatch(): void;
  /** An event (a bookmark included) arrived on the watch. */
  delivered(): void;
  /** How long to wait before watching again after a watch that ended at once, empty; -1: stopped. */
  pause(): number;
  running(): boolean;
}

/**
 * client-node's Watch with what upstream's reflector adds: bookmarks (so a resumed watch starts from a
 * recent resource version, not one compacted away), a server-side timeout, and a pause before watching
 * again when the last watch ended at once with nothing in it (a server closing watches straight away
 * would otherwise be hammered).
 */
class ResumingWatch extends k8s.Watch {
  private quickEnds = false;
  private cancelPause: (() => void) | undefined;

  constructor(
    config: k8s.KubeConfig,
    private readonly hooks: ResumingWatchHooks,
  ) {
    super(config);
  }

  /** Ends a pause before the next watch (the source stops; `running` then says not to watch). */
  stop(): void {
    this.cancelPause?.();
  }

  override async watch(
    path: string,
    queryParams: Record<string, string | number | boolean | undefined>,
    callback: (phase: string, apiObj: any, watchObj?: any) => void,
    done: (err: any) => void,
  ): Promise<AbortController> {
    const { clock } = this.hooks;
    if (this.quickEnds) {
      const wait = this.hooks.pause();
      if (wait > 0) {
        await new Promise<void>((resolve) => {
          const cancel = clock.setTimeout(resolve, wait);
          this.cancelPause = () => {
            cancel();
            resolve();
          };
        });
        this.cancelPause = undefined;
      }
    }
    if (!this.hooks.running()) return new AbortController();
    this.hooks.beforeWatch();
    const started = clock.now();
    let events = 0;
    return super.watch(
      path,
      { ...queryParams, allowWatchBookmarks: true, timeoutSeconds: this.hooks.timeoutSeconds() },
      (phase, obj, raw) => {
        if (phase !== 'ERROR') {
          if (events++ === 0) this.hooks.delivered();
        }
        callback(phase, obj, raw);
      },
      (err) => {
        this.quickEnds = !err && events === 0 && clock.now() - started < 1_000;
        done(err);
      },
    );
  }
}

/** client-node's model objects (Dates, `_continue`) back to the JSON the API server sent. */
function plain(value: unknown): unknown {
  if (value instanceof Date) {
    return Number.isNaN(value.getTime()) ? undefined : value.toISOString().replace('.000Z', 'Z');
  }
  if (Array.isArray(value)) return value.map(plain);
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      if (v !== undefined) out[k === '_continue' ? 'continue' : k] = plain(v);
    }
    return out;
  }
  return value;
}

/** One line for a failed list or watch: the HTTP status and the server's message, or the network error. */
function describeError(err: unknown): string {
  const e = err as { code?: unknown; statusCode?: unknown; body?: unknown; message?: string };
  const code = typeof e?.code === 'number' ? e.code : typeof e?.statusCode === 'number' ? e.statusCode : 0;
  if (code > 0) {
    let message = '';
    try {
      const body = typeof e.body === 'string' ? JSON.parse(e.body) : e.body;
      message = (body as { message?: string })?.message ?? '';
    } catch {
      message = typeof e.body === 'string' ? e.body.slice(0, 200) : '';
    }
    return `HTTP ${code}${message ? `: ${message}` : e.message ? `: ${e.message.split('\n')[0]}` : ''}`;
  }
  return errorMessage(err).split('\n')[0] ?? String(err);
}
