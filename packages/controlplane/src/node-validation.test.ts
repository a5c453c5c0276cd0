import test from 'ava';
import { startCluster, type TestCluster } from './test-helpers.js';

// A Node's pod CIDRs and providerID as upstream's ValidateNode / ValidateNodeUpdate hold them: valid CIDRs,
// set once from unset (by the node IPAM controller), never changed afterwards — pods hold addresses from them.
let c: TestCluster;
test.before(async () => {
  c = await startCluster({
    controllers: {
      scheduler: false,
      endpointSlices: false,
      workloads: false,
      nodeIpam: false,
      nodeLifecycle: false,
    },
  });
});
test.after.always(async () => {
  await c?.destroy();
});
const cluster = () => c;

const node = (name: string, spec: Record<string, unknown> = {}) => ({
  apiVersion: 'v1',
  kind: 'Node',
  metadata: { name },
  spec,
});

test('a Node with a pod CIDR that is not a CIDR, or more than two, is refused with the field named', async (t) => {
  const c = cluster();
  const bad = await c.api('POST', '/api/v1/nodes', node('bad', { podCIDRs: ['10.244.0.0/24', 'ten/8'] }));
  t.is(bad.status, 422);
  t.regex(bad.json.message, /spec\.podCIDRs\[1\]: Invalid value: "ten\/8": must be a valid CIDR/);
  const three = await c.api(
    'POST',
    '/api/v1/nodes',
    node('three', { podCIDRs: ['10.244.0.0/24', 'fd00::/64', '10.245.0.0/24'] }),
  );
  t.is(three.status, 422);
  t.regex(
    three.json.message,
    /spec\.podCIDRs: Invalid value: .*may specify no more than one CIDR for each IP family/,
  );
  const mismatch = await c.api(
    'POST',
    '/api/v1/nodes',
    node('mismatch', { podCIDR: '10.244.1.0/24', podCIDRs: ['10.244.0.0/24'] }),
  );
  t.is(mismatch.status, 422);
  t.regex(
    mismatch.json.message,
    /spec\.podCIDR: Invalid value: "10\.244\.1\.0\/24": must equal spec\.podCIDRs\[0\]/,
  );
  const dual = await c.api(
    'POST',
    '/api/v1/nodes',
    node('dual', { podCIDRs: ['10.244.0.0/24', 'fd00:1::/64'] }),
  );
  t.is(dual.status, 201, JSON.stringify(dual.json));
});

test('a pod CIDR and a providerID are set once from unset, then never changed', async (t) => {
  const c = cluster();
  t.is((await c.api('POST', '/api/v1/nodes', node('n1'))).status, 201);
  const merge = { 'Content-Type': 'application/merge-patch+json' };
  const set = await c.api(
    'PATCH',
    '/api/v1/nodes/n1',
    { spec: { podCIDR: '10.244.3.0/24', podCIDRs: ['10.244.3.0/24'], providerID: 'kind://n1' } },
    merge,
  );
  t.is(set.status, 200, JSON.stringify(set.json));
  const moved = await c.api(
    'PATCH',
    '/api/v1/nodes/n1',
    { spec: { podCIDR: '10.244.4.0/24', podCIDRs: ['10.244.4.0/24'] } },
    merge,
  );
  t.is(moved.status, 422);
  t.regex(
    moved.json.message,
    /spec\.podCIDRs: Forbidden: node updates may not change podCIDR except from "" to valid/,
  );
  const dropped = await c.api(
    'PATCH',
    '/api/v1/nodes/n1',
    { spec: { podCIDR: null, podCIDRs: null } },
    merge,
  );
  t.is(dropped.status, 422, 'nor removed');
  const provider = await c.api('PATCH', '/api/v1/nodes/n1', { spec: { providerID: 'kind://other' } }, merge);
  t.is(provider.status, 422);
  t.regex(provider.json.message, /spec\.providerID: Forbidden: node updates may not change providerID/);
  const labels = await c.api('PATCH', '/api/v1/nodes/n1', { metadata: { labels: { a: 'b' } } }, merge);
  t.is(labels.status, 200, 'other updates go through');
  t.deepEqual(labels.json.spec.podCIDRs, ['10.244.3.0/24']);
});
