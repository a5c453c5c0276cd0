import test from 'ava';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Pod } from '@nodelet/api';
import { CriLabels } from '@nodelet/cri';
import { type Harness, makePod, startHarness } from '../test-harness.js';
import { goldenCases, TESTDATA } from './test-golden.js';

// The kubelet on the fake runtime: what a process in the pod reads (the fake answers `cat` from the
// sandbox's DNS config and the kubelet's hosts mount) is the golden content with the pod's IP.

async function start(t: { teardown(fn: () => unknown): void }): Promise<Harness> {
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-dns-'));
  const resolvConf = join(dir, 'resolv.conf');
  writeFileSync(resolvConf, 'nameserver 8.8.8.8\nsearch host.domain\n');
  const h = await startHarness({
    network: { clusterDNS: ['10.0.0.10'], clusterDomain: 'kubernetes.io', resolvConf },
  });
  t.teardown(() => h.kubelet.stop());
  return h;
}

function podOf(name: string): Pod {
  const c = goldenCases().find((x) => x.name === name)!;
  const base = makePod(c.pod.metadata!.name!, c.pod.spec ?? {});
  return {
    ...base,
    metadata: { ...base.metadata, namespace: c.pod.metadata!.namespace, uid: `uid-${name}` },
  };
}

async function containerOf(h: Harness, uid: string): Promise<string> {
  const list = await h.runtime.listContainers({
    filter: { id: '', podSandboxId: '', labelSelector: { [CriLabels.PodUID]: uid } },
  });
  return list.containers[0]!.id;
}

async function cat(h: Harness, containerId: string, ...cmd: string[]): Promise<string> {
  const r = await h.runtime.execSync({ containerId, cmd, timeout: 0n });
  return Buffer.from(r.stdout).toString();
}

const goldenFile = (file: string) => readFileSync(new URL(file, TESTDATA), 'utf8');

for (const name of ['cluster-first-dnsconfig', 'subdomain', 'none-dnsconfig']) {
  test(`fake runtime: a pod's /etc/hosts and /etc/resolv.conf are golden ${name}`, async (t) => {
    const h = await start(t);
    const pod = podOf(name);
    h.source.set([pod]);
    await h.clock.advance(2_000);
    const status = h.status(pod.metadata!.uid!);
    t.is(status.phase, 'Running');
    const id = await containerOf(h, pod.metadata!.uid!);
    const goldenIP = goldenCases().find((x) => x.name === name)!.podIPs[0]!;
    t.is(
      await cat(h, id, 'cat', '/etc/hosts'),
      goldenFile(`${name}.hosts`).replaceAll(goldenIP, status.podIP!),
    );
    t.is(await cat(h, id, 'cat', '/etc/resolv.conf'), goldenFile(`${name}.resolv.conf`));
    t.is(await cat(h, id, 'hostname'), `${pod.spec!.hostname ?? pod.metadata!.name}\n`);
  });
}

test('fake runtime: a 70-character pod name gives a 63-character hostname; setHostnameAsFQDN the FQDN', async (t) => {
  const h = await start(t);
  const long = makePod(`${'a'.repeat(62)}-0123456`, {});
  const fqdn = makePod('db', { subdomain: 'sub', setHostnameAsFQDN: true });
  h.source.set([long, fqdn]);
  await h.clock.advance(2_000);
  t.is(await cat(h, await containerOf(h, long.metadata!.uid!), 'hostname'), `${'a'.repeat(62)}\n`);
  t.is(
    await cat(h, await containerOf(h, fqdn.metadata!.uid!), 'hostname'),
    'db.sub.default.svc.kubernetes.io\n',
  );
});

test('an FQDN over 64 characters: the sandbox is not created, the status says why; other pods run', async (t) => {
  const h = await start(t);
  const bad = makePod('x'.repeat(40), { subdomain: 'sub', setHostnameAsFQDN: true });
  const good = makePod('good', {});
  const events: string[] = [];
  h.bus.subscribe('[Kubelet] Pod Event', (e) => {
    if (e.podName === bad.metadata!.name) events.push(`${e.reason}: ${e.message}`);
  });
  h.source.set([bad, good]);
  await h.clock.advance(2_000);
  const fqdn = `${'x'.repeat(40)}.sub.default.svc.kubernetes.io`;
  const waiting = h.status(bad.metadata!.uid!).containerStatuses?.[0]?.state?.waiting;
  t.is(waiting?.reason, 'ContainerCreating');
  t.is(
    waiting?.message,
    `Failed to create pod sandbox: failed to construct FQDN from pod hostname and cluster domain, FQDN ${fqdn} is too long (64 characters is the max, ${fqdn.length} characters requested)`,
  );
  t.is(h.status(good.metadata!.uid!).phase, 'Running');
  t.is(
    (await h.runtime.listPodSandbox({})).items.filter((s) => s.metadata?.name === bad.metadata!.name).length,
    0,
  );
});

test('a container that mounts a volume at /etc/hosts keeps it; the others get the kubelet file', async (t) => {
  const h = await start(t);
  const pod = makePod('own-hosts', {
    volumes: [{ name: 'hosts', emptyDir: {} }],
    containers: [
      { name: 'own', image: 'busybox:1.36', volumeMounts: [{ name: 'hosts', mountPath: '/etc/hosts' }] },
      { name: 'plain', image: 'busybox:1.36' },
    ],
  });
  h.source.set([pod]);
  await h.clock.advance(2_000);
  const list = await h.runtime.listContainers({
    filter: { id: '', podSandboxId: '', labelSelector: { [CriLabels.PodUID]: pod.metadata!.uid! } },
  });
  const mounts = async (name: string) => {
    const id = list.containers.find((c) => c.metadata?.name === name)!.id;
    const s = (await h.runtime.containerStatus({ containerId: id, verbose: false })).status!;
    return s.mounts
      .filter((m) => m.containerPath === '/etc/hosts')
      .map((m) => m.hostPath.split('/').slice(-2).join('/'));
  };
  t.deepEqual(await mounts('own'), ['kubernetes.io~empty-dir/hosts']);
  t.deepEqual(await mounts('plain'), [`${pod.metadata!.uid}/etc-hosts`]);
});

test('ClusterFirst without clusterDNS: the node file, and a MissingClusterDNS warning on the pod', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-dns-'));
  const resolvConf = join(dir, 'resolv.conf');
  writeFileSync(resolvConf, 'nameserver 8.8.8.8\nsearch host.domain\n');
  const h = await startHarness({ network: { resolvConf } });
  t.teardown(() => h.kubelet.stop());
  const events: string[] = [];
  h.bus.subscribe('[Kubelet] Pod Event', (e) => events.push(`${e.eventType} ${e.reason}: ${e.message}`));
  const pod = makePod('web', {});
  h.source.set([pod]);
  await h.clock.advance(2_000);
  t.is(
    await cat(h, await containerOf(h, pod.metadata!.uid!), 'cat', '/etc/resolv.conf'),
    'search host.domain\nnameserver 8.8.8.8\n',
  );
  t.true(
    events.includes(
      'Warning MissingClusterDNS: pod: "web_default(uid-web)". kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.',
    ),
  );
});

test('an unreadable resolvConf: sandboxes wait with the reason in the status', async (t) => {
  const h = await startHarness({
    network: { clusterDNS: ['10.0.0.10'], resolvConf: '/nonexistent/resolv.conf' },
  });
  t.teardown(() => h.kubelet.stop());
  const pod = makePod('web', {});
  h.source.set([pod]);
  await h.clock.advance(2_000);
  t.like(h.status(pod.metadata!.uid!).containerStatuses?.[0]?.state?.waiting, {
    reason: 'ContainerCreating',
    message: 'Failed to create pod sandbox: open /nonexistent/resolv.conf: no such file or directory',
  });
});
