import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import test, { type ExecutionContext } from 'ava';
import { connectListWatch, type ListWatchApi } from '@nodelet/client';
import { ClientNodeApi, loadKubeConfig } from '@nodelet/client/client-node';
import { createLogger, definePlugin, Kernel, MemorySink, RealClock } from '@nodelet/kernel';
import { ApiSource, PROXY_LABEL_SELECTOR } from './api-source.js';
import { apiSourcePlugin } from './api-source-plugin.js';
import { type ProxyBackend, ProxyBackendCapability } from './backend.js';
import { ProxyCapability, proxyPlugin } from './plugin.js';
import { ProxySourceCapability } from './source.js';
import type { EndpointSlice, Service } from './objects.js';
import type { ProxySourceHandler } from './source.js';

// The API source against a scripted API server on 127.0.0.1: what it asks for (label selector,
// bookmarks, the resource version it resumes from) and what it does with each answer (list, watch
// events, 410 Gone, failures, a server that closes watches at once).

type Kind = 'services' | 'endpointslices' | 'nodes';
const PATHS: Record<string, Kind> = {
  '/api/v1/services': 'services',
  '/apis/discovery.k8s.io/v1/endpointslices': 'endpointslices',
  '/api/v1/nodes': 'nodes',
};

interface Request {
  kind: Kind;
  watch: boolean;
  query: URLSearchParams;
}

/** Just enough of an API server: lists, watch streams the test writes events into, scripted failures. */
class ScriptedApi {
  readonly requests: Request[] = [];
  readonly objects: Record<Kind, Map<string, any>> = {
    services: new Map(),
    endpointslices: new Map(),
    nodes: new Map(),
  };
  rv = 100;
  /** Answers the next requests of a kind with this status instead (consumed one by one). */
  readonly failNext: Record<Kind, number[]> = { services: [], endpointslices: [], nodes: [] };
  /** Watches of a kind end as soon as they start, with nothing in them. */
  readonly closeAtOnce = new Set<Kind>();
  private readonly watches = new Map<Kind, Set<ServerResponse>>();
  private server!: Server;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => this.serve(req, res));
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    for (const set of this.watches.values()) for (const res of set) res.destroy();
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }

  /** A client of this server: over client-node, or over node's HTTPS client (what the plugin uses). */
  async client(kind: ClientKind): Promise<ListWatchApi & { close(): void }> {
    if (kind === 'client-node')
      return new ClientNodeApi(loadKubeConfig({ master: this.url }), { clock: new RealClock() });
    return connectListWatch({ master: this.url }, { clock: new RealClock() });
  }

  /** Stores an object (a new resource version) and sends it to open watches. */
  put(kind: Kind, obj: any, type?: 'ADDED' | 'MODIFIED'): void {
    const key = `${obj.metadata.namespace ?? ''}/${obj.metadata.name}`;
    const exists = this.objects[kind].has(key);
    obj.metadata.resourceVersion = String(++this.rv);
    this.objects[kind].set(key, obj);
    this.send(kind, { type: type ?? (exists ? 'MODIFIED' : 'ADDED'), object: obj });
  }

  remove(kind: Kind, obj: any): void {
    const key = `${obj.metadata.namespace ?? ''}/${obj.metadata.name}`;
    const stored = this.objects[kind].get(key);
    this.objects[kind].delete(key);
    this.send(kind, {
      type: 'DELETED',
      object: { ...stored, metadata: { ...stored.metadata, resourceVersion: String(++this.rv) } },
    });
  }

  send(kind: Kind, event: unknown): void {
    for (const res of this.watches.get(kind) ?? [])
      if (!res.writableEnded) res.write(JSON.stringify(event) + '\n');
  }

  /** Ends every open watch of a kind (as a server's watch timeout does). */
  endWatches(kind: Kind): void {
    for (const res of this.watches.get(kind) ?? []) res.end();
    this.watches.get(kind)?.clear();
  }

  openWatches(kind: Kind): number {
    return this.watches.get(kind)?.size ?? 0;
  }

  private serve(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', this.url);
    const kind = PATHS[url.pathname];
    if (!kind) {
      res.writeHead(404).end();
      return;
    }
    const watch = url.searchParams.get('watch') === 'true';
    this.requests.push({ kind, watch, query: url.searchParams });
    const fail = this.failNext[kind].shift();
    if (fail) {
      res.writeHead(fail, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ kind: 'Status', code: fail, message: `scripted failure ${fail}` }));
      return;
    }
    if (!watch) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          kind: 'List',
          metadata: { resourceVersion: String(this.rv) },
          items: [...this.objects[kind].values()],
        }),
      );
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    if (this.closeAtOnce.has(kind)) {
      res.end();
      return;
    }
    res.flushHeaders();
    let set = this.watches.get(kind);
    if (!set) this.watches.set(kind, (set = new Set()));
    set.add(res);
    res.on('close', () => set.delete(res));
  }
}

const service = (name: string, labels: Record<string, string> = {}, port = 80): Service => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name, namespace: 'default', labels },
  spec: { type: 'ClusterIP', clusterIP: '10.96.0.10', ports: [{ port, protocol: 'TCP', targetPort: 8080 }] },
});

const slice = (
  name: string,
  svc: string,
  ips: string[],
  labels: Record<string, string> = {},
): EndpointSlice => ({
  apiVersion: 'discovery.k8s.io/v1',
  kind: 'EndpointSlice',
  metadata: { name, namespace: 'default', labels: { 'kubernetes.io/service-name': svc, ...labels } },
  addressType: 'IPv4',
  endpoints: ips.map((ip) => ({ addresses: [ip], conditions: { ready: true } })),
  ports: [{ port: 8080, protocol: 'TCP' }],
});

/** A handler that records what the source hands over, in order. */
function recorder() {
  const calls: string[] = [];
  const labels: Record<string, string>[] = [];
  let synced = 0;
  const handler: ProxySourceHandler = {
    upsertService: (s) => calls.push(`+svc ${s.metadata?.name}`),
    deleteService: (s) => calls.push(`-svc ${s.metadata?.name}`),
    upsertEndpointSlice: (s) =>
      calls.push(`+slice ${s.metadata?.name} ${(s.endpoints ?? []).map((e) => e.addresses?.[0]).join(',')}`),
    deleteEndpointSlice: (s) => calls.push(`-slice ${s.metadata?.name}`),
    synced: () => {
      synced++;
      calls.push('synced');
    },
    nodeLabels: (l) => labels.push(l),
  };
  return { calls, labels, handler, synced: () => synced };
}

async function until<T>(what: string, probe: () => T, timeoutMs = 5000): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = probe();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

type ClientKind = 'client-node' | 'https';

/** A scenario run once with each client implementation, the title saying which. */
function clientTest(
  title: string,
  scenario: (t: ExecutionContext, client: ClientKind) => Promise<void>,
): void {
  for (const client of ['client-node', 'https'] as const)
    test(`${title} [${client}]`, (t) => scenario(t, client));
}

async function setup(t: { teardown: (fn: () => unknown) => void }, client: ClientKind, nodeName?: string) {
  const api = new ScriptedApi();
  await api.start();
  const logs = new MemorySink();
  const source = new ApiSource({
    api: await api.client(client),
    clock: new RealClock(),
    logger: createLogger({ sink: logs.sink, level: 'debug' }),
    initialBackoffMs: 20,
    maxBackoffMs: 80,
    ...(nodeName ? { nodeName } : {}),
  });
  const rec = recorder();
  t.teardown(async () => {
    await source.stop();
    await api.stop();
  });
  return { api, source, logs, rec };
}

clientTest(
  'lists then watches Services and EndpointSlices with the upstream label selector and bookmarks',
  async (t, client) => {
    const { api, source, rec } = await setup(t, client);
    api.put('services', service('web'));
    api.put('endpointslices', slice('web-abc', 'web', ['10.244.0.5']));
    await source.start(rec.handler);
    await until('both watches', () => api.openWatches('services') && api.openWatches('endpointslices'));
    t.deepEqual(rec.calls.slice().sort(), ['+slice web-abc 10.244.0.5', '+svc web', 'synced']);
    t.is(rec.calls.at(-1), 'synced', 'synced comes after both initial lists');
    for (const kind of ['services', 'endpointslices'] as const) {
      const [list, watch] = api.requests.filter((r) => r.kind === kind);
      t.is(list?.query.get('labelSelector'), PROXY_LABEL_SELECTOR);
      t.is(watch?.query.get('labelSelector'), PROXY_LABEL_SELECTOR);
      t.is(watch?.query.get('allowWatchBookmarks'), 'true');
      t.is(watch?.query.get('resourceVersion'), '102', 'the watch starts at the list resource version');
      t.truthy(Number(watch?.query.get('timeoutSeconds')) >= 300);
    }
    t.is(PROXY_LABEL_SELECTOR, '!service.kubernetes.io/service-proxy-name,!service.kubernetes.io/headless');

    rec.calls.length = 0;
    api.put('endpointslices', slice('web-abc', 'web', ['10.244.0.5', '10.244.0.6']));
    api.put('services', service('db'));
    api.remove('services', service('web'));
    await until('three events', () => rec.calls.length >= 3);
    // Two streams: the order between kinds is not defined, within a kind it is the server's.
    t.deepEqual(rec.calls.sort(), ['+slice web-abc 10.244.0.5,10.244.0.6', '+svc db', '-svc web']);
    t.is(rec.synced(), 1);
  },
);

clientTest(
  'objects of another proxy or of headless services are dropped even when the server ignores the selector',
  async (t, client) => {
    const { api, source, rec } = await setup(t, client);
    api.put('services', service('mine'));
    api.put('services', service('theirs', { 'service.kubernetes.io/service-proxy-name': 'other' }));
    api.put(
      'endpointslices',
      slice('headless-x', 'headless', ['10.244.0.9'], { 'service.kubernetes.io/headless': '' }),
    );
    await source.start(rec.handler);
    await until('synced', () => rec.synced() === 1);
    t.true(rec.calls.includes('+svc mine'));
    t.false(rec.calls.includes('+svc theirs'));
    t.false(rec.calls.some((c) => c.startsWith('+slice headless-x')));
    // Relabelled to another proxy while watched: the proxy forgets it.
    await until('the service watch', () => api.openWatches('services'));
    rec.calls.length = 0;
    api.put('services', service('mine', { 'service.kubernetes.io/service-proxy-name': 'other' }));
    await until('the relabelled service', () => rec.calls.length >= 1);
    t.deepEqual(rec.calls, ['-svc mine']);
  },
);

clientTest('a bookmark moves the resource version a resumed watch starts from', async (t, client) => {
  const { api, source, rec } = await setup(t, client);
  await source.start(rec.handler);
  await until('the service watch', () => api.openWatches('services'));
  api.send('services', {
    type: 'BOOKMARK',
    object: { kind: 'Service', metadata: { resourceVersion: '500' } },
  });
  await until('the bookmark to arrive', () => source.resourceVersion('Service') === '500');
  const before = api.requests.filter((r) => r.kind === 'services' && r.watch).length;
  api.endWatches('services');
  const resumed = await until(
    'the resumed watch',
    () => api.requests.filter((r) => r.kind === 'services' && r.watch)[before],
  );
  t.is(resumed.query.get('resourceVersion'), '500');
  t.is(api.requests.filter((r) => r.kind === 'services' && !r.watch).length, 1, 'no relist');
  t.deepEqual(rec.calls, ['synced']);
});

clientTest(
  '410 Gone lists again; what vanished meanwhile is deleted, what stayed is not re-sent',
  async (t, client) => {
    const { api, source, rec } = await setup(t, client);
    api.put('services', service('a'));
    api.put('services', service('b'));
    await source.start(rec.handler);
    await until('the service watch', () => api.openWatches('services'));
    rec.calls.length = 0;
    // The server compacted past our version: the watch answers 410, history is lost (b vanished, c came).
    api.objects.services.delete('default/b');
    const c = service('c');
    c.metadata!.resourceVersion = String(++api.rv);
    api.objects.services.set('default/c', c);
    api.send('services', {
      type: 'ERROR',
      object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version' },
    });
    api.endWatches('services');
    await until('the relist', () => source.lists.Service === 2);
    await until('two changes', () => rec.calls.length >= 2);
    t.deepEqual(rec.calls.sort(), ['+svc c', '-svc b']);
    t.is(rec.synced(), 1, 'synced is said once');
  },
);

clientTest(
  'a failed list or watch is retried with backoff, logged one line each, and nothing is lost',
  async (t, client) => {
    const { api, source, rec, logs } = await setup(t, client);
    api.put('services', service('web'));
    api.failNext.services.push(500, 503);
    await source.start(rec.handler);
    await until('synced', () => rec.synced() === 1);
    t.true(rec.calls.includes('+svc web'));
    const lines = logs.lines().filter((l) => l.includes('listing or watching Services failed; retrying'));
    t.is(lines.length, 2);
    t.regex(lines[0]!, /err="HTTP 500: scripted failure 500"/);
    t.regex(lines[1]!, /retryAfterMs=40/, 'the wait doubles');
    // A watch refused (the server restarting) is retried from the same resource version.
    api.failNext.services.push(500);
    const lists = source.lists.Service;
    api.endWatches('services');
    await until('the watch back', () => api.openWatches('services'));
    t.is(source.lists.Service, lists, 'resumed without a relist');
    api.put('services', service('later'));
    await until('the new service', () => rec.calls.includes('+svc later'));
  },
);

clientTest('a server that ends every watch at once is not hammered', async (t, client) => {
  const { api, source, rec } = await setup(t, client);
  api.closeAtOnce.add('services');
  await source.start(rec.handler);
  await until('synced', () => rec.synced() === 1);
  const started = Date.now();
  await until(
    '5 watch attempts',
    () => api.requests.filter((r) => r.kind === 'services' && r.watch).length >= 5,
  );
  // Waits of 20, 40, 80, 80 ms at least between the five attempts.
  t.true(Date.now() - started >= 200, `${Date.now() - started} ms for 5 attempts`);
});

clientTest(
  "this node's topology labels are handed over when they change, not on every status update",
  async (t, client) => {
    const { api, source, rec } = await setup(t, client, 'node-a');
    const node = (zone: string) => ({
      kind: 'Node',
      metadata: {
        name: 'node-a',
        labels: { 'topology.kubernetes.io/zone': zone, 'kubernetes.io/hostname': 'node-a' },
      },
      status: { conditions: [] },
    });
    api.put('nodes', node('z1'));
    await source.start(rec.handler);
    await until('the node watch', () => api.openWatches('nodes'));
    const req = api.requests.find((r) => r.kind === 'nodes' && r.watch);
    t.is(req?.query.get('fieldSelector'), 'metadata.name=node-a');
    await until('labels', () => rec.labels.length === 1);
    api.put('nodes', { ...node('z1'), status: { conditions: [{ type: 'Ready' }] } });
    api.put('nodes', node('z2'));
    await until('new labels', () => rec.labels.length === 2);
    t.deepEqual(rec.labels, [
      { 'topology.kubernetes.io/zone': 'z1' },
      { 'topology.kubernetes.io/zone': 'z2' },
    ]);
  },
);

test('as plugins: the proxy syncs what the API source lists, takes the node topology labels, refuses a bad slice once', async (t) => {
  const api = new ScriptedApi();
  await api.start();
  t.teardown(() => api.stop());
  api.put('services', service('web'));
  api.put('endpointslices', slice('web-abc', 'web', ['10.244.0.5']));
  api.put('nodes', {
    kind: 'Node',
    metadata: { name: 'node-a', labels: { 'topology.kubernetes.io/zone': 'z1' } },
  });
  const syncs: string[] = [];
  const backend: ProxyBackend = {
    name: 'recording',
    async sync(state, _changes, full) {
      const eps = [...state.servicePorts.values()].map((p) => p.clusterEndpoints.map((e) => e.ip).join('+'));
      syncs.push(`${full ? 'full' : 'partial'} ${eps.join(',')}`);
      return { full, written: 0 };
    },
    async cleanup() {},
  };
  const logs = new MemorySink();
  const kernel = new Kernel({ logger: createLogger({ sink: logs.sink }) });
  kernel.use(
    definePlugin({
      manifest: { name: 'proxy-recording', version: '0', provides: [ProxyBackendCapability], requires: [] },
      register: (ctx) => ctx.provide(ProxyBackendCapability, backend),
    }),
  );
  kernel.use(apiSourcePlugin, { master: api.url, nodeName: 'node-a', initialBackoffMs: 20 });
  kernel.use(proxyPlugin, { nodeName: 'node-a', healthzBindAddress: '', minSyncPeriodMs: 0 });
  await kernel.start();
  t.teardown(() => kernel.stop());
  const proxier = kernel.get(ProxyCapability);
  const source = () => kernel.get(ProxySourceCapability) as ApiSource;
  await until('a sync with the endpoint', () => syncs.some((s) => s.endsWith('10.244.0.5')));
  await until(
    'the zone',
    () => proxier.tracker.nodeContext.topologyLabels['topology.kubernetes.io/zone'] === 'z1',
  );

  await until('the slice watch', () => api.openWatches('endpointslices'));
  const bad = slice('web-abc', 'web', ['10.244.0.300']);
  api.put('endpointslices', bad);
  await until('the refusal', () => logs.find('ignoring invalid EndpointSlice default/web-abc').length > 0);
  // Listed again (the watch expired): the same bad version is not reported again.
  api.send('endpointslices', { type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired' } });
  api.endWatches('endpointslices');
  await until('the relist', () => source().lists.EndpointSlice === 2);
  await until('the slice watch back', () => api.openWatches('endpointslices'));
  api.put('endpointslices', slice('web-abc', 'web', ['10.244.0.6']));
  await until('the next good version', () => syncs.some((s) => s.endsWith('10.244.0.6')));
  t.is(
    logs.find('ignoring invalid EndpointSlice default/web-abc').length,
    1,
    'one line for the same bad object',
  );
  t.regex(
    logs.lines().find((l) => l.includes('ignoring invalid'))!,
    /endpoints\[0\]\.addresses\[0\]: Invalid value: "10\.244\.0\.300": must be a valid IPv4 address; its last valid version stays in force/,
  );
  t.false(syncs.some((s) => s.includes('10.244.0.300')));
});

test('as a plugin: a kubeconfig that is not there stops the start, naming the file', async (t) => {
  const kernel = new Kernel({ logger: createLogger({ sink: () => undefined }) });
  kernel.use(apiSourcePlugin, { kubeconfig: '/nonexistent/proxy.kubeconfig' }, 'nodelet.yaml: proxy');
  await t.throwsAsync(() => kernel.start(), {
    message: /kubeconfig \/nonexistent\/proxy\.kubeconfig: no such file/,
  });
});
