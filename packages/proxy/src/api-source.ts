import {
  ApiError,
  Informer,
  type KubeObject,
  listWatcher,
  type ListWatchApi,
  type ReflectorOptions,
} from '@nodelet/client';
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
  /** The API server (`connectKubeconfig` of @nodelet/client; its fake in tests). Closed on stop. */
  api: ListWatchApi & { close?(): void };
  clock: Clock;
  logger: Logger;
  /** This node: its Node object's topology labels are handed to the proxy. Optional. */
  nodeName?: string;
  /** First wait after a failed list or watch; doubles up to `maxBackoffMs` (upstream 800 ms / 30 s). */
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  /** Server-side watch timeout; the watch is then resumed from the last resource version. Default 5–10 min. */
  watchTimeoutSeconds?: number;
  /** Source of randomness for the watch timeout's spread (tests pass their own). */
  random?: () => number;
}

type Kind = 'Service' | 'EndpointSlice' | 'Node';

interface Informed {
  kind: Kind;
  informer: Informer<KubeObject>;
}

/**
 * Services and EndpointSlices from the API server (upstream kube-proxy's informers), through
 * @nodelet/client's `Informer`: list, then watch from the list's resource version with bookmarks; 410
 * Gone lists again; a failed list or watch is retried after a backoff (800 ms doubling to 30 s), all on
 * the kernel clock. Services and slices that belong to another proxy (`service.kubernetes.io/service-proxy-name`) or
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

  constructor(private readonly options: ApiSourceOptions) {}

  /** The API server address, for messages. */
  get server(): string {
    return this.options.api.server;
  }

  /** Lists done so far, per kind (relists after 410 Gone and failures included). */
  get lists(): Record<Kind, number> {
    const out: Record<Kind, number> = { Service: 0, EndpointSlice: 0, Node: 0 };
    for (const i of this.informers) out[i.kind] = i.informer.lists;
    return out;
  }

  /** The resource version the watch of a kind resumes from ('' before its first list). */
  resourceVersion(kind: Kind): string {
    return this.informers.find((i) => i.kind === kind)?.informer.resourceVersion ?? '';
  }

  start(handler: ProxySourceHandler): void {
    if (this.running) return;
    this.running = true;
    this.handler = handler;
    const labelSelector = PROXY_LABEL_SELECTOR;
    this.add('Service', '/api/v1/services', { labelSelector });
    this.add('EndpointSlice', '/apis/discovery.k8s.io/v1/endpointslices', { labelSelector });
    const node = this.options.nodeName;
    if (node) this.add('Node', '/api/v1/nodes', { fieldSelector: `metadata.name=${node}` });
    this.options.logger.info('watching Services and EndpointSlices', {
      server: this.server,
      labelSelector,
      ...(node ? { node } : {}),
    });
    for (const i of this.informers) i.informer.start();
  }

  stop(): void {
    if (!this.running) return;
    this.running = false;
    for (const i of this.informers) i.informer.stop();
    this.informers.length = 0;
    this.handler = undefined;
    // A later start lists afresh and says `synced` again.
    this.synced = false;
    this.nodeLabelsJson = undefined;
    this.options.api.close?.();
  }

  private add(kind: Kind, path: string, selectors: { labelSelector?: string; fieldSelector?: string }): void {
    const random = this.options.random ?? Math.random;
    const source = listWatcher<KubeObject>(this.options.api, path, {
      ...selectors,
      // Upstream's reflector spreads watch timeouts over 5–10 min, so watches do not all end at once.
      watchTimeoutSeconds: () => this.options.watchTimeoutSeconds ?? 300 + Math.floor(random() * 300),
    });
    const entry: Informed = {
      kind,
      informer: new Informer(
        this.options.clock,
        source,
        {
          added: (o) => this.deliver(kind, o, false),
          updated: (o) => this.deliver(kind, o, false),
          deleted: (o) => this.deliver(kind, o, true),
          listed: () => this.listed(),
        },
        this.reflectorOptions(kind),
      ),
    };
    this.informers.push(entry);
  }

  private reflectorOptions(kind: Kind): ReflectorOptions {
    return {
      initialBackoffMs: this.options.initialBackoffMs ?? 800,
      maxBackoffMs: this.options.maxBackoffMs ?? 30_000,
      onError: (_phase, err, retryAfterMs) =>
        this.options.logger.warn(`listing or watching ${kind}s failed; retrying`, {
          server: this.server,
          retryAfterMs,
          err: describeError(err),
        }),
    };
  }

  /** An informer's list landed: once both kinds have listed, the proxy may sync. */
  private listed(): void {
    const needed = this.informers.filter((i) => i.kind !== 'Node');
    if (this.synced || !needed.every((i) => i.informer.hasSynced)) return;
    this.synced = true;
    const count = (kind: Kind) => this.informers.find((i) => i.kind === kind)?.informer.store.size ?? 0;
    this.options.logger.info('Services and EndpointSlices listed', {
      services: count('Service'),
      endpointSlices: count('EndpointSlice'),
    });
    this.handler?.synced();
  }

  private deliver(
    kind: Kind,
    obj: KubeObject & { metadata?: { labels?: Record<string, string> } },
    deleted: boolean,
  ): void {
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
}

/** One line for a failed list or watch: the HTTP status and the server's message, or the network error. */
function describeError(err: unknown): string {
  if (err instanceof ApiError && err.code > 0) return `HTTP ${err.code}: ${err.detail ?? err.reason}`;
  return errorMessage(err).split('\n')[0] ?? String(err);
}
