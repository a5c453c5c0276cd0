import test from 'ava';
import { createLogger, MemorySink, VirtualClock } from '@nodelet/kernel';
import { Registry } from '../apiserver/registry.js';
import type { KubeObject } from '../object.js';
import { coreEvents } from '../resources/events.js';
import { namespaces } from '../resources/namespaces.js';
import { nodes } from '../resources/nodes.js';
import { pods } from '../resources/pods.js';
import { RevisionStore } from '../storage/revision-store.js';
import { readyNode, waitFor } from '../test-helpers.js';
import { EventRecorder } from './event-recorder.js';
import { Scheduler } from './scheduler.js';

// The scheduler's queue and cache around the plugins, on an in-memory store: when a pod that did not fit
// is tried again, and what it is told.

function setup() {
  const clock = new VirtualClock();
  const logger = createLogger({ sink: new MemorySink().sink });
  const registry = new Registry({
    store: new RevisionStore(':memory:'),
    clock,
    types: [namespaces, nodes, pods, coreEvents],
  });
  registry.create(namespaces, '', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
  for (const n of ['n1', 'n2']) registry.create(nodes, '', readyNode(n));
  const scheduler = new Scheduler(
    registry,
    clock,
    logger,
    new EventRecorder(registry, clock, logger, 'default-scheduler'),
  );
  scheduler.start();
  return { registry, scheduler };
}

function pod(name: string, labels: Record<string, string>, spec: object = {}): object {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, labels },
    spec: { containers: [{ name: 'c', image: 'i' }], ...spec },
  };
}

const hostnameTerm = (app: string) => ({
  labelSelector: { matchLabels: { app } },
  topologyKey: 'kubernetes.io/hostname',
});
const get = (registry: Registry, name: string): KubeObject | undefined =>
  registry.store.get('pods', 'default', name)?.object;
const boundTo = (registry: Registry, name: string) =>
  waitFor(() => get(registry, name)?.spec?.nodeName as string | undefined, `${name} bound`);
const unschedulable = (registry: Registry, name: string) =>
  waitFor(
    () =>
      get(registry, name)?.status?.conditions?.find(
        (c: any) => c.type === 'PodScheduled' && c.status === 'False',
      )?.message as string | undefined,
    `${name} unschedulable`,
  );

test('a pod with required affinity waits until a pod it wants is bound, then joins its node', async (t) => {
  const { registry, scheduler } = setup();
  registry.create(
    pods,
    'default',
    pod(
      'web',
      { app: 'web' },
      {
        affinity: {
          podAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [hostnameTerm('cache')] },
        },
      },
    ),
  );
  t.is(
    await unschedulable(registry, 'web'),
    "0/2 nodes are available: 2 node(s) didn't match pod affinity rules.",
  );
  registry.create(
    pods,
    'default',
    pod('cache', { app: 'cache' }, { nodeSelector: { 'kubernetes.io/hostname': 'n2' } }),
  );
  t.is(await boundTo(registry, 'cache'), 'n2');
  t.is(await boundTo(registry, 'web'), 'n2', 'tried again when a pod was bound, not at the 30 s retry');
  scheduler.stop();
});

test('anti-affinity: the pod that did not fit goes where a deleted replica was', async (t) => {
  const { registry, scheduler } = setup();
  const spec = {
    affinity: { podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [hostnameTerm('solo')] } },
  };
  for (const name of ['s1', 's2', 's3']) registry.create(pods, 'default', pod(name, { app: 'solo' }, spec));
  const placed = new Set([await boundTo(registry, 's1'), await boundTo(registry, 's2')]);
  t.deepEqual([...placed].sort(), ['n1', 'n2']);
  t.is(
    await unschedulable(registry, 's3'),
    "0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules.",
  );
  const event = await waitFor(
    () =>
      registry.store
        .listAll('events', 'default')
        .map((e) => e.object)
        .find((e) => e.reason === 'FailedScheduling'),
    'the FailedScheduling event',
  );
  t.is(event.involvedObject.name, 's3');
  const freed = get(registry, 's1')!.spec.nodeName;
  registry.delete(pods, 'default', 's1', { gracePeriodSeconds: 0 });
  t.is(await boundTo(registry, 's3'), freed);
  scheduler.stop();
});

test('host ports: a second pod asking for the same hostPort goes to the other node, a third waits', async (t) => {
  const { registry, scheduler } = setup();
  const spec = { containers: [{ name: 'c', image: 'i', ports: [{ containerPort: 80, hostPort: 8080 }] }] };
  for (const name of ['h1', 'h2', 'h3']) registry.create(pods, 'default', pod(name, {}, spec));
  t.not(await boundTo(registry, 'h1'), await boundTo(registry, 'h2'));
  t.is(
    await unschedulable(registry, 'h3'),
    "0/2 nodes are available: 2 node(s) didn't have free ports for the requested pod ports.",
  );
  scheduler.stop();
});
