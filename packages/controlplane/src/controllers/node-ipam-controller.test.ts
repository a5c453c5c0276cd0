import test from 'ava';
import { createLogger, MemorySink, VirtualClock } from '@nodelet/kernel';
import { Registry } from '../apiserver/registry.js';
import { coreEvents } from '../resources/events.js';
import { namespaces } from '../resources/namespaces.js';
import { nodes } from '../resources/nodes.js';
import { RevisionStore } from '../storage/revision-store.js';
import { waitFor } from '../test-helpers.js';
import { EventRecorder } from './event-recorder.js';
import { NodeCidrSet } from './node-cidr-set.js';
import { NodeIpamController } from './node-ipam-controller.js';

// The node IPAM controller (range allocator) on an in-memory store and a virtual clock.

function setup(cidr = '10.244.0.0/16', mask = 24, store = new RevisionStore(':memory:')) {
  const clock = new VirtualClock();
  const logger = createLogger({ sink: new MemorySink().sink });
  const registry = new Registry({ store, clock, types: [namespaces, nodes, coreEvents] });
  if (!store.get('namespaces', '', 'default'))
    registry.create(namespaces, '', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
  const recorder = new EventRecorder(registry, clock, logger, 'node-ipam-controller');
  const controller = new NodeIpamController(registry, new NodeCidrSet(cidr, mask), clock, logger, recorder);
  return { registry, controller, store };
}

const addNode = (registry: Registry, name: string, spec: object = {}) =>
  registry.create(nodes, '', { apiVersion: 'v1', kind: 'Node', metadata: { name }, spec });

const podCidrOf = (registry: Registry, name: string) =>
  waitFor(
    () => registry.store.get('nodes', '', name)?.object.spec?.podCIDR as string | undefined,
    `${name}'s podCIDR`,
  );

test('each node gets the next /24 of the cluster CIDR in spec.podCIDR and spec.podCIDRs', async (t) => {
  const { registry, controller } = setup();
  controller.start();
  for (const name of ['n1', 'n2', 'n3']) addNode(registry, name);
  t.deepEqual(await Promise.all(['n1', 'n2', 'n3'].map((n) => podCidrOf(registry, n))), [
    '10.244.0.0/24',
    '10.244.1.0/24',
    '10.244.2.0/24',
  ]);
  t.deepEqual(registry.store.get('nodes', '', 'n2')!.object.spec.podCIDRs, ['10.244.1.0/24']);
  controller.stop();
});

test('a deleted node frees its CIDR; a full range waits with CIDRNotAvailable until one is free', async (t) => {
  const { registry, controller } = setup('10.1.0.0/23', 24); // two node CIDRs
  controller.start();
  addNode(registry, 'a');
  addNode(registry, 'b');
  t.is(await podCidrOf(registry, 'b'), '10.1.1.0/24');
  addNode(registry, 'c');
  const event = await waitFor(
    () =>
      registry.store
        .listAll('events', 'default')
        .map((e) => e.object)
        .find((e) => e.reason === 'CIDRNotAvailable'),
    'the CIDRNotAvailable event',
  );
  t.is(event.message, 'Node c status is now: CIDRNotAvailable');
  t.is(event.involvedObject.name, 'c');
  t.is(registry.store.get('nodes', '', 'c')!.object.spec?.podCIDR, undefined);
  registry.delete(nodes, '', 'a');
  t.is(await podCidrOf(registry, 'c'), '10.1.0.0/24', "c takes a's CIDR");
  controller.stop();
});

test('after a restart the taken CIDRs are read off the Nodes: a new node never gets one in use', async (t) => {
  const store = new RevisionStore(':memory:');
  const first = setup('10.244.0.0/16', 24, store);
  addNode(first.registry, 'kept', { podCIDR: '10.244.0.0/24', podCIDRs: ['10.244.0.0/24'] });
  addNode(first.registry, 'also', { podCIDR: '10.244.1.0/24', podCIDRs: ['10.244.1.0/24'] });
  addNode(first.registry, 'bare');
  const second = setup('10.244.0.0/16', 24, store);
  second.controller.start();
  t.is(await podCidrOf(second.registry, 'bare'), '10.244.2.0/24');
  second.controller.stop();
});

test('bad --cluster-cidr / --node-cidr-mask-size: clear errors naming the value', (t) => {
  t.throws(() => new NodeCidrSet('10.244.0.0', 24), {
    message: 'cluster CIDR "10.244.0.0" is not an IPv4 CIDR such as 10.244.0.0/16',
  });
  t.throws(() => new NodeCidrSet('10.244.0.0/25', 24), { message: /mask size 24 must be .*\(\/25\)/ });
  t.throws(() => new NodeCidrSet('10.0.0.0/8', 26), {
    message: /more than 2\^16 node CIDRs; use a mask of at most \/24/,
  });
  const set = new NodeCidrSet('10.244.3.7/16', 24);
  t.is(set.cluster.text, '10.244.0.0/16', 'host bits are cleared, as ParseCIDR does');
  t.is(set.size, 256);
  t.false(set.occupy('10.245.0.0/24'), 'outside the cluster CIDR');
  t.false(set.occupy('10.244.0.0/25'), 'another mask size');
});
