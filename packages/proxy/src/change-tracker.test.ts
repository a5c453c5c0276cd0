import test from 'ava';
import { createLogger, MemorySink } from '@nodelet/kernel';
import { ChangeTracker } from './change-tracker.js';
import type { EndpointSlice, Service } from './objects.js';
import { defaultNodeContext } from './state.js';
import { CONFORMANCE_NODE, conformanceServices, conformanceSlices } from './testing/fixtures.js';
import { ZONE_LABEL } from './topology.js';

function tracker(node = defaultNodeContext(CONFORMANCE_NODE)) {
  const sink = new MemorySink();
  return { t: new ChangeTracker(node, createLogger({ sink: sink.sink })), sink };
}

function loaded() {
  const env = tracker();
  for (const s of conformanceServices()) env.t.upsertService(s);
  for (const s of conformanceSlices()) env.t.upsertEndpointSlice(s);
  return env;
}

const eps = (list: readonly { endpoint: string }[]) => list.map((e) => e.endpoint);

test('slices are merged per service; only ready endpoints serve', (t) => {
  const { t: tr } = loaded();
  const { state, changes } = tr.commit();
  const web = state.servicePorts.get('conformance/web:http')!;
  t.deepEqual(eps(web.clusterEndpoints), ['10.244.1.10:8080', '10.244.2.10:8080', '10.244.3.10:8080']);
  t.is(web.endpoints.length, 4);
  t.true(web.hasEndpoints);
  t.is(web.nodePort, 30080);
  t.false(state.servicePorts.has('conformance/headless:http'));
  t.true(changes.updated.has('conformance/web:http'));
  t.is(changes.removed.size, 0);
});

test('terminating-but-serving endpoints are used only when no endpoint is ready', (t) => {
  const { t: tr } = loaded();
  const term = tr.commit().state.servicePorts.get('conformance/terminating:http')!;
  t.deepEqual(eps(term.clusterEndpoints), ['10.244.2.10:8080']);
  t.true(term.hasEndpoints);
  tr.upsertEndpointSlice({
    ...conformanceSlices().find((s) => s.metadata?.name === 'terminating-abcde')!,
    endpoints: [
      { addresses: ['10.244.2.10'], conditions: { ready: false, serving: true, terminating: true } },
      { addresses: ['10.244.3.10'], conditions: { ready: true } },
    ],
  });
  const after = tr.commit().state.servicePorts.get('conformance/terminating:http')!;
  t.deepEqual(eps(after.clusterEndpoints), ['10.244.3.10:8080']);
});

test('traffic policies: Local uses this node, internal Local without local endpoints has none', (t) => {
  const { t: tr } = loaded();
  const { state } = tr.commit();
  const lb = state.servicePorts.get('conformance/lb-local:http')!;
  t.true(lb.externalPolicyLocal);
  t.deepEqual(eps(lb.localEndpoints), ['10.244.1.10:8080']);
  t.deepEqual(eps(lb.clusterEndpoints), ['10.244.1.10:8080', '10.244.2.10:8080']);
  t.deepEqual(lb.loadBalancerIPs, ['192.0.2.10']);
  t.deepEqual(lb.loadBalancerSourceRanges, ['203.0.113.0/24']);
  t.is(lb.healthCheckNodePort, 30300);
  const il = state.servicePorts.get('conformance/internal-local:http')!;
  t.true(il.internalPolicyLocal);
  t.deepEqual(eps(il.localEndpoints), []);
  t.deepEqual(eps(il.clusterEndpoints), []);
  t.true(il.hasEndpoints, 'the service has endpoints elsewhere: DROP, not REJECT');
});

test('session affinity and ports by name and protocol', (t) => {
  const { t: tr } = loaded();
  const { state } = tr.commit();
  const sticky = state.servicePorts.get('conformance/sticky:http')!;
  t.is(sticky.sessionAffinity, 'ClientIP');
  t.is(sticky.stickyMaxAgeSeconds, 600);
  t.is(state.servicePorts.get('conformance/dns:dns')!.protocol, 'UDP');
  t.deepEqual(eps(state.servicePorts.get('conformance/dns:dns')!.clusterEndpoints), ['10.244.1.10:5353']);
  t.deepEqual(eps(state.servicePorts.get('conformance/dns:dns-tcp')!.clusterEndpoints), ['10.244.1.10:5353']);
});

test('topology hints are used only when every ready endpoint has them and the zone matches', (t) => {
  const node = { ...defaultNodeContext(CONFORMANCE_NODE), topologyLabels: { [ZONE_LABEL]: 'zone-a' } };
  const { t: tr } = tracker(node);
  tr.upsertService({
    kind: 'Service',
    metadata: {
      name: 'topo',
      namespace: 'ns',
      annotations: { 'service.kubernetes.io/topology-mode': 'Auto' },
    },
    spec: { clusterIP: '10.96.1.1', ports: [{ port: 80 }] },
  });
  const slice = (hints: boolean): EndpointSlice => ({
    kind: 'EndpointSlice',
    metadata: { name: 'topo-1', namespace: 'ns', labels: { 'kubernetes.io/service-name': 'topo' } },
    addressType: 'IPv4',
    endpoints: [
      {
        addresses: ['10.0.0.1'],
        zone: 'zone-a',
        ...(hints ? { hints: { forZones: [{ name: 'zone-a' }] } } : {}),
      },
      {
        addresses: ['10.0.0.2'],
        zone: 'zone-b',
        ...(hints ? { hints: { forZones: [{ name: 'zone-b' }] } } : {}),
      },
    ],
    ports: [{ port: 8080 }],
  });
  tr.upsertEndpointSlice(slice(true));
  t.deepEqual(eps(tr.commit().state.servicePorts.get('ns/topo')!.clusterEndpoints), ['10.0.0.1:8080']);
  tr.upsertEndpointSlice(slice(false));
  t.deepEqual(eps(tr.commit().state.servicePorts.get('ns/topo')!.clusterEndpoints), [
    '10.0.0.1:8080',
    '10.0.0.2:8080',
  ]);
});

test('a commit reports only what changed; an unchanged update changes nothing', (t) => {
  const { t: tr } = loaded();
  tr.commit();
  t.false(tr.upsertService(conformanceServices()[0]!), 'same content');
  t.false(tr.pending);
  const slices = conformanceSlices();
  const web = slices.find((s) => s.metadata?.name === 'web-fghij')!;
  tr.upsertEndpointSlice({
    ...web,
    endpoints: [{ addresses: ['10.244.3.11'], conditions: { ready: true } }],
  });
  const { changes } = tr.commit();
  t.deepEqual([...changes.updated], ['conformance/web:http']);
  t.deepEqual([...changes.services], ['conformance/web']);
  tr.deleteService(conformanceServices()[1]!);
  const second = tr.commit().changes;
  t.deepEqual([...second.removed], ['conformance/sticky:http']);
  t.is(second.updated.size, 0);
});

test('bad input: one log line naming the object and field; the last valid version stays', (t) => {
  const { t: tr, sink } = loaded();
  tr.commit();
  const web = conformanceServices()[0]!;
  const bad: Service = structuredClone(web);
  bad.spec!.ports![0]!.port = 70000;
  t.false(tr.upsertService(bad));
  t.false(tr.upsertService(bad), 'reported once');
  const lines = sink.lines('error');
  t.is(lines.length, 1);
  t.regex(
    lines[0]!,
    /ignoring invalid Service conformance\/web: spec\.ports\[0\]\.port: Invalid value: 70000: must be between 1 and 65535, inclusive; its last valid version stays in force/,
  );
  t.is(tr.commit().state.servicePorts.get('conformance/web:http')!.port, 80);

  const slice = structuredClone(conformanceSlices()[0]!);
  slice.endpoints![0]!.addresses = ['10.244.1.300'];
  t.false(tr.upsertEndpointSlice(slice));
  t.regex(
    sink.lines('error')[1]!,
    /ignoring invalid EndpointSlice conformance\/web-abcde: endpoints\[0\]\.addresses\[0\]: Invalid value: "10\.244\.1\.300"/,
  );
  t.is(tr.commit().state.servicePorts.get('conformance/web:http')!.clusterEndpoints.length, 3);
});
