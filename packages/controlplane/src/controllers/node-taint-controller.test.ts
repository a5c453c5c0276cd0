import test from 'ava';
import { createLogger, MemorySink, VirtualClock } from '@nodelet/kernel';
import { Registry } from '../apiserver/registry.js';
import { nodes } from '../resources/nodes.js';
import { RevisionStore } from '../storage/revision-store.js';
import { NodeTaintController, wantedTaints } from './node-taint-controller.js';

// The pressure conditions' NoSchedule taints (upstream node lifecycle controller), on an in-memory store
// and a virtual clock.

const node = (conditions: Record<string, string>, taints: object[] = []) => ({
  apiVersion: 'v1',
  kind: 'Node',
  metadata: { name: 'n1' },
  spec: { taints },
  status: { conditions: Object.entries(conditions).map(([type, status]) => ({ type, status })) },
});

test('wantedTaints: a NoSchedule taint per pressure condition True; others kept; none when nothing changes', (t) => {
  const admin = { key: 'dedicated', value: 'db', effect: 'NoExecute' };
  t.deepEqual(
    wantedTaints(
      node({ MemoryPressure: 'True', DiskPressure: 'False', PIDPressure: 'True', Ready: 'True' }, [
        admin,
      ]) as never,
      'T',
    ),
    [
      admin,
      { key: 'node.kubernetes.io/memory-pressure', effect: 'NoSchedule', timeAdded: 'T' },
      { key: 'node.kubernetes.io/pid-pressure', effect: 'NoSchedule', timeAdded: 'T' },
    ],
  );
  const tainted = [{ key: 'node.kubernetes.io/memory-pressure', effect: 'NoSchedule', timeAdded: 'T' }];
  t.is(wantedTaints(node({ MemoryPressure: 'True' }, tainted) as never, 'T2'), undefined);
  t.deepEqual(wantedTaints(node({ MemoryPressure: 'False' }, [...tainted, admin]) as never, 'T2'), [admin]);
});

test('the controller taints a Node under pressure and untaints it once the condition is False', async (t) => {
  const clock = new VirtualClock();
  const registry = new Registry({ store: new RevisionStore(':memory:'), clock, types: [nodes] });
  const controller = new NodeTaintController(registry, clock, createLogger({ sink: new MemorySink().sink }));
  controller.start();
  registry.create(nodes, '', node({ MemoryPressure: 'False', Ready: 'True' }));
  await clock.advance(100);
  const taints = () =>
    (registry.store.get(nodes.storage, '', 'n1')!.object.spec?.taints ?? []).map(
      (x: { key: string; effect: string }) => `${x.key}:${x.effect}`,
    );
  t.deepEqual(taints(), []);
  const pressured = structuredClone(registry.store.get(nodes.storage, '', 'n1')!.object);
  pressured.status.conditions[0].status = 'True';
  registry.update(nodes, '', 'n1', pressured, { subresource: 'status' });
  await clock.advance(100);
  t.deepEqual(taints(), ['node.kubernetes.io/memory-pressure:NoSchedule']);
  const relieved = structuredClone(registry.store.get(nodes.storage, '', 'n1')!.object);
  relieved.status.conditions[0].status = 'False';
  registry.update(nodes, '', 'n1', relieved, { subresource: 'status' });
  await clock.advance(100);
  t.deepEqual(taints(), []);
  controller.stop();
});
