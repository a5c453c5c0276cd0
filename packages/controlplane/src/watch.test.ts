import test from 'ava';
import { request } from 'node:https';
import { startCluster, waitFor, type TestCluster } from './test-helpers.js';

// resourceVersion semantics over HTTP: watches (selectors, bookmarks, 410 Gone, initial events), paged
// and exact lists, Table and metadata-only representations, discovery and OpenAPI.

let c: TestCluster;

test.before(async () => {
  c = await startCluster({
    bookmarkIntervalMs: 150,
    controllers: { scheduler: false, endpointSlices: false },
  });
  await c.api('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'w' } });
});

test.after.always(async () => {
  await c?.destroy();
});

interface Stream {
  events: any[];
  ended: Promise<void>;
  close(): void;
}

function watch(path: string, accept = 'application/json'): Stream {
  const events: any[] = [];
  let done!: () => void;
  const ended = new Promise<void>((r) => (done = r));
  const req = request(
    new URL(path, c.cp.url),
    {
      ca: c.cp.caCert,
      cert: c.cp.adminCredentials.cert,
      key: c.cp.adminCredentials.key,
      headers: { accept },
    },
    (res) => {
      let buf = '';
      res.on('data', (d: Buffer) => {
        buf += d.toString();
        for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
          events.push(JSON.parse(buf.slice(0, i)));
          buf = buf.slice(i + 1);
        }
      });
      res.on('end', done);
      res.on('close', done);
    },
  );
  req.on('error', done);
  req.end();
  return { events, ended, close: () => req.destroy() };
}

const cm = (name: string, labels: Record<string, string> = {}) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, labels },
});
const merge = { 'content-type': 'application/merge-patch+json' };

test.serial(
  'a watch with a label selector sees objects enter (ADDED) and leave (DELETED) the selection',
  async (t) => {
    const rv = (await c.api('GET', '/api/v1/namespaces/w/configmaps')).json.metadata.resourceVersion;
    const s = watch(
      `/api/v1/namespaces/w/configmaps?watch=1&resourceVersion=${rv}&labelSelector=team%3Dblue`,
    );
    await c.api('POST', '/api/v1/namespaces/w/configmaps', cm('a', { team: 'red' }));
    await c.api(
      'PATCH',
      '/api/v1/namespaces/w/configmaps/a',
      { metadata: { labels: { team: 'blue' } } },
      merge,
    );
    await c.api('PATCH', '/api/v1/namespaces/w/configmaps/a', { data: { x: '1' } }, merge);
    await c.api(
      'PATCH',
      '/api/v1/namespaces/w/configmaps/a',
      { metadata: { labels: { team: 'red' } } },
      merge,
    );
    await c.api('POST', '/api/v1/namespaces/w/configmaps', cm('b', { team: 'blue' }));
    await c.api('DELETE', '/api/v1/namespaces/w/configmaps/b');
    await waitFor(
      () => (s.events.filter((e) => e.type !== 'BOOKMARK').length >= 5 ? true : undefined),
      'five events',
    );
    s.close();
    t.deepEqual(
      s.events.filter((e) => e.type !== 'BOOKMARK').map((e) => `${e.type} ${e.object.metadata.name}`),
      ['ADDED a', 'MODIFIED a', 'DELETED a', 'ADDED b', 'DELETED b'],
    );
    const revs = s.events.map((e) => Number(e.object.metadata.resourceVersion));
    t.deepEqual(
      revs,
      [...revs].sort((x, y) => x - y),
    );
  },
);

test.serial('bookmarks carry the current resourceVersion when asked for', async (t) => {
  const s = watch('/api/v1/namespaces/w/configmaps?watch=true&allowWatchBookmarks=true&resourceVersion=0');
  const bookmark = await waitFor(() => s.events.find((e) => e.type === 'BOOKMARK'), 'a bookmark');
  s.close();
  t.is(bookmark.object.kind, 'ConfigMap');
  t.is(bookmark.object.metadata.resourceVersion, String(c.cp.store.revision));
  // Without allowWatchBookmarks there are none.
  const quiet = watch('/api/v1/namespaces/w/configmaps?watch=true&resourceVersion=0&timeoutSeconds=1');
  await quiet.ended;
  t.false(quiet.events.some((e) => e.type === 'BOOKMARK'));
});

test.serial(
  'a watch from a compacted resourceVersion gets an ERROR event 410 Expired and ends',
  async (t) => {
    const old = c.cp.store.revision;
    await c.api('POST', '/api/v1/namespaces/w/configmaps', cm('c'));
    c.cp.compact();
    const s = watch(`/api/v1/namespaces/w/configmaps?watch=true&resourceVersion=${old - 1}`);
    await s.ended;
    t.is(s.events.length, 1);
    t.is(s.events[0].type, 'ERROR');
    t.like(s.events[0].object, { kind: 'Status', status: 'Failure', code: 410, reason: 'Expired' });
    t.regex(s.events[0].object.message, /^too old resource version: \d+ \(\d+\)$/);
  },
);

test.serial('sendInitialEvents streams the current objects, then a bookmark marks their end', async (t) => {
  const s = watch(
    '/api/v1/namespaces/w/configmaps?watch=true&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan',
  );
  const end = await waitFor(
    () => s.events.find((e) => e.type === 'BOOKMARK'),
    'the initial-events-end bookmark',
  );
  s.close();
  const initial = s.events.slice(0, s.events.indexOf(end));
  t.true(initial.length >= 2);
  t.true(initial.every((e) => e.type === 'ADDED'));
  t.is(end.object.metadata.annotations['k8s.io/initial-events-end'], 'true');
  const refused = await c.api('GET', '/api/v1/namespaces/w/configmaps?watch=true&sendInitialEvents=true');
  t.is(refused.status, 422);
});

test.serial(
  'lists page with limit/continue at one revision; an Exact resourceVersion reads history',
  async (t) => {
    for (let i = 0; i < 7; i++)
      await c.api('POST', '/api/v1/namespaces/w/configmaps', cm(`page-${i}`, { paged: 'yes' }));
    const names: string[] = [];
    let next: string | undefined;
    let rv: string | undefined;
    for (let i = 0; i < 10; i++) {
      const r = await c.api(
        'GET',
        `/api/v1/namespaces/w/configmaps?labelSelector=paged%3Dyes&limit=3${next ? `&continue=${next}` : ''}`,
      );
      t.is(r.status, 200);
      rv ??= r.json.metadata.resourceVersion;
      t.is(r.json.metadata.resourceVersion, rv);
      names.push(...r.json.items.map((x: any) => x.metadata.name));
      if (i === 0) await c.api('POST', '/api/v1/namespaces/w/configmaps', cm('page-9', { paged: 'yes' })); // not in this snapshot
      next = r.json.metadata.continue;
      if (!next) break;
    }
    t.deepEqual(
      names,
      Array.from({ length: 7 }, (_, i) => `page-${i}`),
    );
    const exact = await c.api(
      'GET',
      `/api/v1/namespaces/w/configmaps?labelSelector=paged%3Dyes&resourceVersion=${rv}&resourceVersionMatch=Exact`,
    );
    t.is(exact.json.items.length, 7);
    t.is(exact.json.metadata.resourceVersion, rv);
    const page = await c.api('GET', '/api/v1/namespaces/w/configmaps?limit=2');
    c.cp.compact();
    await c.api('POST', '/api/v1/namespaces/w/configmaps', cm('after-compaction'));
    c.cp.compact();
    const stale = await c.api(
      'GET',
      `/api/v1/namespaces/w/configmaps?limit=2&continue=${page.json.metadata.continue}`,
    );
    t.is(stale.status, 410);
    t.is(stale.json.reason, 'Expired');
  },
);

test.serial('Table and PartialObjectMetadata representations, as kubectl asks for them', async (t) => {
  const table = await c.api('GET', '/api/v1/namespaces/w/configmaps?limit=1', undefined, {
    accept:
      'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json',
  });
  t.is(table.json.kind, 'Table');
  t.is(table.json.apiVersion, 'meta.k8s.io/v1');
  t.deepEqual(
    table.json.columnDefinitions.map((d: any) => d.name),
    ['Name', 'Data', 'Age'],
  );
  t.is(table.json.rows.length, 1);
  t.is(table.json.rows[0].object.kind, 'PartialObjectMetadata');
  t.truthy(table.json.metadata.continue);
  const meta = await c.api('GET', '/api/v1/namespaces/w/configmaps', undefined, {
    accept: 'application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io',
  });
  t.is(meta.json.kind, 'PartialObjectMetadataList');
  t.true(meta.json.items.every((i: any) => i.kind === 'PartialObjectMetadata' && !('data' in i)));
  const s = watch(
    '/api/v1/namespaces/w/configmaps?watch=true&resourceVersion=0',
    'application/json;as=Table;v=v1;g=meta.k8s.io',
  );
  await waitFor(() => (s.events.length >= 2 ? true : undefined), 'two table events');
  s.close();
  t.truthy(s.events[0].object.columnDefinitions);
  t.is(s.events[1].object.columnDefinitions, undefined);
  t.is(s.events[1].object.rows.length, 1);
  const protobufOnly = await c.api('GET', '/api/v1/namespaces/w/configmaps', undefined, {
    accept: 'application/vnd.kubernetes.protobuf',
  });
  t.is(protobufOnly.status, 406);
});

test.serial('field selectors: pods by node and phase, events by involved object', async (t) => {
  const pod = (name: string, node?: string) => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: { ...(node ? { nodeName: node } : {}), containers: [{ name: 'c', image: 'x' }] },
  });
  await c.api('POST', '/api/v1/namespaces/w/pods', pod('on-a', 'node-a'));
  await c.api('POST', '/api/v1/namespaces/w/pods', pod('on-b', 'node-b'));
  const onA = await c.api(
    'GET',
    '/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-a%2Cstatus.phase!%3DFailed',
  );
  t.deepEqual(
    onA.json.items.map((p: any) => p.metadata.name),
    ['on-a'],
  );
  const byName = await c.api('GET', '/api/v1/namespaces/w/pods?fieldSelector=metadata.name%3Don-b');
  t.deepEqual(
    byName.json.items.map((p: any) => p.metadata.name),
    ['on-b'],
  );
  const uid = (await c.api('GET', '/api/v1/namespaces/w/pods/on-a')).json.metadata.uid;
  const ev = await c.api('POST', '/apis/events.k8s.io/v1/namespaces/w/events', {
    apiVersion: 'events.k8s.io/v1',
    kind: 'Event',
    metadata: { name: 'on-a.1' },
    eventTime: '2026-01-01T00:00:00.000000Z',
    reportingController: 'test',
    reportingInstance: 'test-1',
    action: 'Testing',
    reason: 'Tested',
    note: 'a note',
    type: 'Normal',
    regarding: { kind: 'Pod', namespace: 'w', name: 'on-a', uid },
  });
  t.is(ev.status, 201, ev.text);
  // The same event, as core/v1 shows it to kubectl describe.
  const core = await c.api(
    'GET',
    `/api/v1/namespaces/w/events?fieldSelector=involvedObject.name%3Don-a%2CinvolvedObject.namespace%3Dw%2CinvolvedObject.uid%3D${uid}`,
  );
  t.is(core.json.items.length, 1);
  t.like(core.json.items[0], {
    reason: 'Tested',
    message: 'a note',
    reportingComponent: 'test',
    involvedObject: { name: 'on-a' },
  });
});

test.serial(
  'discovery: legacy and aggregated documents; OpenAPI v3 says the server validates fields',
  async (t) => {
    const legacy = await c.api('GET', '/api/v1');
    t.is(legacy.json.kind, 'APIResourceList');
    const pods = legacy.json.resources.find((r: any) => r.name === 'pods');
    t.like(pods, { namespaced: true, kind: 'Pod', shortNames: ['po'], categories: ['all'] });
    t.true(legacy.json.resources.some((r: any) => r.name === 'pods/status'));
    const aggregated = await c.api('GET', '/apis', undefined, {
      accept: 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json',
    });
    t.is(
      aggregated.headers['content-type'],
      'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList',
    );
    t.deepEqual(aggregated.json.items.map((g: any) => g.metadata.name).sort(), [
      'apps',
      'authentication.k8s.io',
      'authorization.k8s.io',
      'batch',
      'certificates.k8s.io',
      'coordination.k8s.io',
      'discovery.k8s.io',
      'events.k8s.io',
      // Served by the API server itself (no metrics-server to install): kubectl top works.
      'metrics.k8s.io',
      'policy',
      'rbac.authorization.k8s.io',
    ]);
    const index = await c.api('GET', '/openapi/v3');
    const url = index.json.paths['api/v1'].serverRelativeURL;
    const doc = await c.api('GET', url);
    const patch = doc.json.paths['/api/v1/namespaces/{namespace}/pods/{name}'].patch;
    t.deepEqual(patch['x-kubernetes-group-version-kind'], { group: '', version: 'v1', kind: 'Pod' });
    t.true(patch.parameters.some((p: any) => p.name === 'fieldValidation'));
    t.truthy(patch.requestBody.content['application/strategic-merge-patch+json']);
    const containers = doc.json.components.schemas['io.k8s.api.core.v1.PodSpec'].properties.containers;
    t.is(containers['x-kubernetes-patch-merge-key'], 'name');
    const version = await c.api('GET', '/version');
    t.like(version.json, { major: '1', minor: '34' });
  },
);
