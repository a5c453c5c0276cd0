import test from 'ava';
import { createLogger } from '@nodelet/kernel';
import { ChangeTracker } from './change-tracker.js';
import { selectEndpoints } from './endpoint-selection.js';
import { defaultNodeContext } from './state.js';
import { CONFORMANCE_NODE, conformanceServices, conformanceSlices } from './testing/fixtures.js';

function state() {
  const t = new ChangeTracker(defaultNodeContext(CONFORMANCE_NODE), createLogger({ sink: () => undefined }));
  for (const s of conformanceServices()) t.upsertService(s);
  for (const s of conformanceSlices()) t.upsertEndpointSlice(s);
  return t.commit().state;
}

const eps = (list: readonly { endpoint: string }[]) => list.map((e) => e.endpoint);
const port = (name: string) => selectEndpoints(state().servicePorts.get(name)!);

test('Cluster policies: every kind of traffic goes to the cluster-wide set', (t) => {
  const s = port('conformance/web:http');
  t.deepEqual(eps(s.internal), ['10.244.1.10:8080', '10.244.2.10:8080', '10.244.3.10:8080']);
  t.deepEqual(s.external, s.internal);
  t.is(s.internalNoEndpoints, undefined);
  t.true(s.dispatchesCluster);
  t.false(s.dispatchesLocal);
  t.true(s.externalEntry, 'a NodePort service has an external entry');
});

test('external Local: external traffic to this node only, internal traffic cluster-wide', (t) => {
  const s = port('conformance/lb-local:http');
  t.deepEqual(eps(s.external), ['10.244.1.10:8080']);
  t.deepEqual(eps(s.internal), ['10.244.1.10:8080', '10.244.2.10:8080']);
  t.true(s.externalLocal);
  t.true(s.dispatchesCluster && s.dispatchesLocal);
});

test('internal Local without a local endpoint: dropped, not rejected (the service has endpoints elsewhere)', (t) => {
  const s = port('conformance/internal-local:http');
  t.deepEqual(s.internal, []);
  t.is(s.internalNoEndpoints, 'drop');
  t.false(s.dispatchesCluster || s.dispatchesLocal);
});

test('no endpoint anywhere: rejected, and no chain dispatches', (t) => {
  const s = port('conformance/empty:http');
  t.deepEqual([s.internal, s.external], [[], []]);
  t.is(s.internalNoEndpoints, 'reject');
  t.is(s.externalNoEndpoints, 'reject');
  t.false(s.externalEntry, 'no external entry without endpoints');
});

test('serving-terminating endpoints serve when no endpoint is ready', (t) => {
  t.deepEqual(eps(port('conformance/terminating:http').internal), ['10.244.2.10:8080']);
});
