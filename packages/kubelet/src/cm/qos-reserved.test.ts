import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import type { Container, Pod } from '@nodelet/api';
import { createLogger, MemorySink } from '@nodelet/kernel';
import { CgroupFs } from './cgroup-fs.js';
import { type CgroupsConfig, ContainerManager } from './container-manager.js';
import type { ResourceConfig } from './pod-resource-config.js';
import { parseQosReserved, qosMemoryLimits } from './qos-reserved.js';

// qosReserved (upstream setMemoryReserve): the Burstable and BestEffort cgroups' memory limits keep a
// share of the higher classes' requests out of their reach, recomputed as pods come and go. The pods
// are upstream's activeTestPods (qos_container_manager_linux_test.go).

const Mi = 2 ** 20;
const pod = (uid: string, resources: Container['resources']): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: uid, namespace: 'test', uid },
  spec: { containers: [{ name: 'foo', image: 'busybox', resources }] },
});
const guaranteed = pod('12345678', {
  requests: { memory: '128Mi', cpu: '1' },
  limits: { memory: '128Mi', cpu: '1' },
});
const burstable1 = pod('87654321', {
  requests: { memory: '128Mi', cpu: '1' },
  limits: { memory: '256Mi', cpu: '2' },
});
const burstable2 = pod('01234567', { requests: { memory: '256Mi', cpu: '2' } });
const bestEffort = pod('besteffort', {});

const allocatable = 7 * 1024 * Mi;
const limitCases: { name: string; pods: Pod[]; percent: number; want: [number, number] | undefined }[] = [
  {
    name: '50%: burstable less half of 128Mi, besteffort less half of 384Mi more',
    pods: [guaranteed, burstable1, burstable2, bestEffort],
    percent: 50,
    want: [allocatable - 64 * Mi, allocatable - 64 * Mi - 192 * Mi],
  },
  {
    name: '100%: every request held',
    pods: [guaranteed, burstable1, burstable2],
    percent: 100,
    want: [allocatable - 128 * Mi, allocatable - 512 * Mi],
  },
  { name: '0%: nothing held', pods: [guaranteed, burstable1], percent: 0, want: [allocatable, allocatable] },
  { name: 'no pods: allocatable', pods: [], percent: 50, want: [allocatable, allocatable] },
  {
    name: 'shares truncated as integers',
    pods: [pod('odd', { requests: { memory: '3' } })],
    percent: 50,
    want: [allocatable, allocatable - 1],
  },
];
for (const c of limitCases) {
  test(`qosReserved limits: ${c.name}`, (t) => {
    const limits = qosMemoryLimits(c.pods, allocatable, c.percent);
    t.deepEqual(limits && [limits.burstable, limits.bestEffort], c.want);
  });
}

test('qosReserved limits: none when allocatable memory is unknown (upstream leaves the cgroups alone)', (t) => {
  t.is(qosMemoryLimits([guaranteed], 0, 50), undefined);
});

test('qosReserved is parsed as upstream: memory only, a whole percentage from 0 to 100, errors naming the field', (t) => {
  t.deepEqual(parseQosReserved({ memory: '50%' }, 'qosReserved'), { memory: 50 });
  t.deepEqual(parseQosReserved({}, 'qosReserved'), {});
  const bad: [Record<string, string>, RegExp][] = [
    [{ cpu: '50%' }, /field "qosReserved": cannot reserve "cpu" resource \(only memory\)/],
    [{ memory: '50' }, /field "qosReserved.memory": percentage expected, got "50"/],
    [{ memory: '12.5%' }, /field "qosReserved.memory": percentage expected/],
    [{ memory: '101%' }, /field "qosReserved.memory": percentage must be between 0 and 100, got "101%"/],
    [{ memory: '-1%' }, /percentage must be between 0 and 100/],
  ];
  for (const [map, message] of bad) t.throws(() => parseQosReserved(map, 'qosReserved'), { message });
});

function fakeMount(t: { teardown(fn: () => void): void }, layout: 'v1' | 'v2'): string {
  const dir = mkdtempSync(join(tmpdir(), `nodelet-qos-${layout}-`));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  if (layout === 'v2') writeFileSync(join(dir, 'cgroup.controllers'), 'cpu memory pids\n');
  else for (const c of ['cpu', 'memory', 'pids']) mkdirSync(join(dir, c));
  return dir;
}

function manager(mount: string, config: Partial<CgroupsConfig> = {}, fs?: CgroupFs) {
  const sink = new MemorySink();
  const cm = new ContainerManager(
    { driver: 'cgroupfs', root: '/', enforceNodeAllocatable: ['pods'], mountPoint: mount, ...config },
    {
      logger: createLogger({ sink: sink.sink }),
      capacity: { cpu: '4', memory: '8Gi' },
      // The eviction threshold is not held from the cgroups: allocatable is 8Gi - 1Gi.
      reservation: {
        systemReserved: { memory: '1Gi' },
        evictionHard: [{ signal: 'memory.available', quantity: 100 * Mi }],
      },
      ...(fs ? { fs } : {}),
    },
  );
  return { cm, sink };
}

for (const layout of ['v1', 'v2'] as const) {
  test(`container manager with qosReserved memory 50% (cgroup ${layout}): the QoS limits follow the pods as they come and go`, async (t) => {
    const mount = fakeMount(t, layout);
    const { cm } = manager(mount, { qosReserved: { memory: 50 } });
    const limit = (qos: string) =>
      Number(
        layout === 'v2'
          ? readFileSync(join(mount, 'kubepods', qos, 'memory.max'), 'utf8')
          : readFileSync(join(mount, 'memory/kubepods', qos, 'memory.limit_in_bytes'), 'utf8'),
      );
    const limits = () => [limit('burstable'), limit('besteffort')];
    await cm.start();
    t.deepEqual(limits(), [allocatable, allocatable], 'no pods yet');
    await cm.ensure(guaranteed);
    t.deepEqual(limits(), [allocatable - 64 * Mi, allocatable - 64 * Mi]);
    await cm.ensure(burstable1);
    await cm.ensure(burstable2);
    await cm.ensure(bestEffort);
    t.deepEqual(limits(), [allocatable - 64 * Mi, allocatable - 256 * Mi]);
    await cm.remove(guaranteed);
    t.deepEqual(limits(), [allocatable, allocatable - 192 * Mi], 'the Guaranteed pod gone');
    await cm.remove(burstable1);
    await cm.remove(burstable2);
    t.deepEqual(limits(), [allocatable, allocatable]);
  });
}

test('container manager without qosReserved: the QoS cgroups get no memory limit', async (t) => {
  const mount = fakeMount(t, 'v1');
  const { cm } = manager(mount);
  await cm.start();
  await cm.ensure(guaranteed);
  t.deepEqual(cm.qosConfigs(), { Burstable: { cpuShares: 2 }, BestEffort: { cpuShares: 2 } });
});

/** A cgroup file system whose kernel refuses a memory limit below the cgroup's usage (EBUSY). */
class BusyMemoryFs extends CgroupFs {
  override async update(path: string, config: ResourceConfig): Promise<void> {
    if (config.memory !== undefined && config.memory < (await this.memoryUsage(path).catch(() => 0))) {
      throw new Error(`cannot write ${config.memory} to ${path}/memory.limit_in_bytes: EBUSY`);
    }
    return super.update(path, config);
  }
}

test('a QoS cgroup already using more than qosReserved leaves it is limited to its usage, as upstream retries', async (t) => {
  const mount = fakeMount(t, 'v1');
  const { cm, sink } = manager(mount, { qosReserved: { memory: 100 } }, new BusyMemoryFs(mount));
  await cm.start();
  const usage = allocatable - 10 * Mi;
  writeFileSync(join(mount, 'memory/kubepods/besteffort/memory.usage_in_bytes'), String(usage));
  await cm.ensure(burstable2);
  t.is(
    readFileSync(join(mount, 'memory/kubepods/burstable/memory.limit_in_bytes'), 'utf8'),
    String(allocatable),
  );
  t.is(readFileSync(join(mount, 'memory/kubepods/besteffort/memory.limit_in_bytes'), 'utf8'), String(usage));
  t.is(sink.find('limited to its usage').length, 1);
});
