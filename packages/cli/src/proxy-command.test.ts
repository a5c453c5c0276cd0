import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { createLogger, type Logger, MemorySink } from '@nodelet/kernel';
import { systemEnv } from '@nodelet/proxy';
import {
  conformanceServices,
  conformanceSlices,
  declareUnavailable,
  kernelUnavailable,
  NetnsTopology,
  tally,
  WEB,
} from '@nodelet/proxy/testing';
import { stringify } from 'yaml';
import { loadConfigFile } from './nodelet-config.js';
import {
  parseGoDuration,
  parseProxyArgs,
  proxyHelp,
  resolveProxySetup as resolveOnHost,
} from './proxy-command.js';
import { pollUntil } from './test-helpers.js';

const main = fileURLToPath(new URL('./main.js', import.meta.url));
/** These tests are of parsing: as on a host that has every kernel tool (proxy-mode.test covers the host). */
const resolveProxySetup = (parsed: Parameters<typeof resolveOnHost>[0], logger: Logger) =>
  resolveOnHost(parsed, logger, { has: () => true });
// Checked before any test is declared (ava wants every declaration in the first tick after this).
// The end-to-end test runs iptables-legacy, then nftables: both tools must be there.
const e2eMissing = await kernelUnavailable(['iptables-legacy-restore', 'nft']);

test('flags: mode, durations, back end; bad values are one clear line', async (t) => {
  const logger = createLogger({ sink: () => undefined });
  const setup = await resolveProxySetup(
    parseProxyArgs([
      '--mode',
      'nftables',
      '--min-sync-period',
      '500ms',
      '--node-ip',
      '10.0.0.5',
      '--hostname-override',
      'Node-A',
    ]),
    logger,
  );
  t.is(setup.mode, 'nftables');
  t.is(setup.proxy.minSyncPeriodMs, 500);
  t.is(setup.proxy.nodeName, 'node-a');
  t.deepEqual(setup.proxy.nodeIPs, ['10.0.0.5']);
  t.is(setup.proxy.healthzBindAddress, '127.0.0.1:10256');
  t.is(setup.proxy.metricsBindAddress, '127.0.0.1:10249');
  await t.throwsAsync(
    () => resolveProxySetup(parseProxyArgs(['--mode', 'iptables', '--iptables-backend', 'xt']), logger),
    {
      message: '--iptables-backend must be auto, nft or legacy; got "xt"',
    },
  );
  t.throws(() => parseGoDuration('1 second', '--sync-period'), {
    message: '--sync-period: "1 second" is not a duration; write it like 1s, 30s or 500ms',
  });
  t.throws(() => parseProxyArgs(['--bogus']), { message: 'unknown flag --bogus; see nodelet proxy --help' });
});

test('--config: a KubeProxyConfiguration, and a NodeletConfiguration proxy section over it', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'nodelet-proxy-cfg-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(
    join(dir, 'kube-proxy.yaml'),
    stringify({
      apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
      kind: 'KubeProxyConfiguration',
      mode: 'iptables',
      clusterCIDR: '10.244.0.0/16',
      iptables: { minSyncPeriod: '2s', syncPeriod: '1m', masqueradeAll: true },
      conntrack: { maxPerCore: 32768 },
    }),
  );
  await writeFile(
    join(dir, 'nodelet.yaml'),
    stringify({
      apiVersion: 'nodelet.dev/v1alpha1',
      kind: 'NodeletConfiguration',
      nodeName: 'node1',
      proxy: {
        kubeProxyConfig: './kube-proxy.yaml',
        services: './services',
        iptables: { backend: 'legacy' },
      },
    }),
  );
  const sink = new MemorySink();
  const setup = await resolveProxySetup(
    parseProxyArgs(['--config', join(dir, 'nodelet.yaml')]),
    createLogger({ sink: sink.sink }),
  );
  t.is(setup.mode, 'iptables');
  t.is(setup.iptablesBackend, 'legacy');
  t.is(setup.proxy.nodeName, 'node1');
  t.is(setup.proxy.clusterCIDR, '10.244.0.0/16');
  t.is(setup.proxy.minSyncPeriodMs, 2000);
  t.is(setup.proxy.syncPeriodMs, 60_000);
  t.true(setup.proxy.masqueradeAll);
  t.is(setup.proxy.services, join(dir, 'services'));
  t.is(sink.find('field="conntrack"').length, 1, 'an unimplemented field is reported once by name');
});

test('--kubeconfig / --master: the API server as the source; with --services too it is one clear line', async (t) => {
  const logger = createLogger({ sink: () => undefined });
  const setup = await resolveProxySetup(
    parseProxyArgs(['--kubeconfig', 'kc.yaml', '--master', 'https://10.0.0.1:6443', '--mode', 'iptables']),
    logger,
  );
  t.deepEqual(setup.api, { kubeconfig: resolve('kc.yaml'), master: 'https://10.0.0.1:6443' });
  t.is(setup.proxy.services, undefined);
  await t.throwsAsync(
    () => resolveProxySetup(parseProxyArgs(['--kubeconfig', 'kc.yaml', '--services', 'dir']), logger),
    { message: 'flags --services and --kubeconfig/--master both give the Services to proxy; keep one' },
  );
  await t.throwsAsync(() => resolveProxySetup(parseProxyArgs(['--mode', 'none']), logger), {
    message: '--mode none means no proxy; choose iptables, nftables, ipvs, userspace',
  });
  const help = proxyHelp;
  t.regex(help, /^ {2}--kubeconfig FILE {14}list and watch Services and EndpointSlices/m);
  t.regex(help, /^ {2}nodelet proxy --kubeconfig FILE \[--hostname-override NAME\] \[flags\]$/m);
});

test('--config: the proxy section of a NodeletConfiguration, KubeProxyConfiguration-shaped; bad fields are named', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'nodelet-proxy-cfg-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const logger = createLogger({ sink: () => undefined });
  const write = (name: string, proxy: unknown) =>
    writeFile(
      join(dir, name),
      stringify({ apiVersion: 'nodelet.dev/v1alpha1', kind: 'NodeletConfiguration', proxy }),
    );
  await write('nodelet.yaml', {
    mode: 'nftables',
    kubeconfig: './proxy.kubeconfig',
    hostnameOverride: 'Node-B',
    nftables: { minSyncPeriod: '250ms', syncPeriod: '1m' },
    iptables: { minSyncPeriod: '5s' },
  });
  const setup = await resolveProxySetup(parseProxyArgs(['--config', join(dir, 'nodelet.yaml')]), logger);
  t.is(setup.mode, 'nftables');
  t.deepEqual(setup.api, { kubeconfig: join(dir, 'proxy.kubeconfig') }, 'relative to the file');
  t.is(setup.proxy.nodeName, 'node-b');
  t.is(setup.proxy.minSyncPeriodMs, 250, 'the section of the mode in use');
  t.is(setup.proxy.syncPeriodMs, 60_000);

  // A flag source wins over the file's.
  const flagged = await resolveProxySetup(
    parseProxyArgs(['--config', join(dir, 'nodelet.yaml'), '--services', join(dir, 'svc')]),
    logger,
  );
  t.is(flagged.api, undefined);
  t.is(flagged.proxy.services, join(dir, 'svc'));

  // Upstream's field for it: clientConnection.kubeconfig of a KubeProxyConfiguration.
  await writeFile(
    join(dir, 'kube-proxy.yaml'),
    stringify({
      apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
      kind: 'KubeProxyConfiguration',
      clientConnection: { kubeconfig: 'kp.kubeconfig' },
    }),
  );
  const upstream = await resolveProxySetup(
    parseProxyArgs(['--config', join(dir, 'kube-proxy.yaml')]),
    logger,
  );
  t.deepEqual(upstream.api, { kubeconfig: join(dir, 'kp.kubeconfig') });

  await write('typo.yaml', { iptabels: {} });
  await t.throwsAsync(() => resolveProxySetup(parseProxyArgs(['--config', join(dir, 'typo.yaml')]), logger), {
    message: `${join(dir, 'typo.yaml')}: unknown field "proxy.iptabels"; remove it or check its spelling`,
  });
  await write('dur.yaml', { mode: 'iptables', iptables: { syncPeriod: 'often' } });
  await t.throwsAsync(() => resolveProxySetup(parseProxyArgs(['--config', join(dir, 'dur.yaml')]), logger), {
    message: `${join(dir, 'dur.yaml')}: field "proxy.iptables.syncPeriod": "often" is not a duration; write it like 1s, 30s or 500ms`,
  });
  await write('both.yaml', { services: './svc', kubeconfig: './kc' });
  await t.throwsAsync(() => resolveProxySetup(parseProxyArgs(['--config', join(dir, 'both.yaml')]), logger), {
    message: `${join(dir, 'both.yaml')}: fields proxy.services and proxy.kubeconfig/master both give the Services to proxy; keep one`,
  });
});

test('one nodelet.yaml serves the kubelet and the proxy: nodelet kubelet --config accepts the proxy section', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-proxy-cfg-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'nodelet.yaml');
  writeFileSync(
    file,
    stringify({
      apiVersion: 'nodelet.dev/v1alpha1',
      kind: 'NodeletConfiguration',
      nodeName: 'node1',
      kubelet: { podManifestPath: './manifests' },
      proxy: { mode: 'iptables', kubeconfig: './kc', iptables: { backend: 'legacy', masqueradeBit: 14 } },
    }),
  );
  const loaded = loadConfigFile(file, createLogger({ sink: () => undefined }));
  t.is(loaded.nodelet?.proxy?.iptables?.backend, 'legacy');
  writeFileSync(file, 'apiVersion: nodelet.dev/v1alpha1\nkind: NodeletConfiguration\nproxy:\n  mode: 3\n');
  t.throws(() => loadConfigFile(file, createLogger({ sink: () => undefined })), {
    message: `${file}: field "proxy.mode" must be of type string`,
  });
});

// End to end, as an operator runs it: the CLI process runs inside the node namespace of a topology.
if (e2eMissing) declareUnavailable(test, 'nodelet proxy end-to-end tests', e2eMissing);
const e2e = e2eMissing ? () => undefined : test.serial;

function startProxy(topo: NetnsTopology, args: string[]): { child: ChildProcess; output: () => string } {
  let out = '';
  const child = spawn('ip', ['netns', 'exec', topo.node, process.execPath, main, 'proxy', ...args], {
    env: systemEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  return { child, output: () => out };
}

async function stopProxy(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

async function healthz(
  topo: NetnsTopology,
): Promise<{ status: number; body: Record<string, unknown> } | undefined> {
  const script = `fetch('http://127.0.0.1:10256/healthz').then(async (r) => console.log(JSON.stringify({ status: r.status, body: await r.json() }))).catch(() => console.log('null'))`;
  return JSON.parse(await topo.exec(topo.node, process.execPath, ['-e', script])) ?? undefined;
}

/** Waits for a truthy value (45 s: three times what a step takes on a loaded 2-core machine). */
const waitFor = <T>(what: string, fn: () => Promise<T | undefined>): Promise<T> =>
  pollUntil(what, async () => (await fn()) || undefined, { timeoutMs: 45_000, intervalMs: 200 });

e2e(
  'nodelet proxy: serves from files, follows edits, keeps rules after stop, switches mode, cleans up',
  async (t) => {
    const topo = await NetnsTopology.create();
    const dir = await mkdtemp(join(tmpdir(), 'nodelet-proxy-e2e-'));
    const children: ChildProcess[] = [];
    t.teardown(async () => {
      for (const c of children) await stopProxy(c);
      await topo.destroy();
      await rm(dir, { recursive: true, force: true });
    });
    await topo.startServers(8080);
    const slices = conformanceSlices({ backends: topo.backendIPs as [string, string, string] });
    await writeFile(
      join(dir, 'services.yaml'),
      conformanceServices()
        .map((s) => stringify(s))
        .join('---\n'),
    );
    await writeFile(join(dir, 'slices.yaml'), slices.map((s) => stringify(s)).join('---\n'));

    const first = startProxy(topo, [
      '--mode',
      'iptables',
      '--iptables-backend',
      'legacy',
      '--services',
      dir,
      '--node-ip',
      topo.nodeClientIP,
    ]);
    children.push(first.child);
    const h = await waitFor('healthz', async () => {
      const r = await healthz(topo);
      return r?.body.lastUpdated ? r : undefined;
    });
    t.is(h.status, 200);
    t.is(h.body.backend, 'iptables');
    t.deepEqual(Object.keys(tally(await topo.connect(WEB.clusterIP, WEB.port, 30))).sort(), [
      'b1',
      'b2',
      'b3',
    ]);

    // An edit of the files: the third endpoint goes away; the rules follow.
    await writeFile(
      join(dir, 'slices.yaml'),
      slices
        .map((s) => stringify(s.metadata?.name === 'web-fghij' ? { ...s, endpoints: [] } : s))
        .join('---\n'),
    );
    await waitFor('the endpoint removal', async () => {
      const got = tally(await topo.connect(WEB.clusterIP, WEB.port, 20));
      return !got.b3 && got.b1 ? true : undefined;
    });

    // Stopped: the rules stay in force.
    await stopProxy(first.child);
    t.regex(first.output(), /nodelet proxy running mode="iptables"/);
    t.deepEqual(Object.keys(tally(await topo.connect(WEB.clusterIP, WEB.port, 20))).sort(), ['b1', 'b2']);
    t.regex(await topo.exec(topo.node, 'iptables-legacy-save'), /KUBE-SERVICES/);

    // Another mode: the iptables rules are removed at start, nftables carries the traffic.
    const second = startProxy(topo, [
      '--mode',
      'nftables',
      '--services',
      dir,
      '--node-ip',
      topo.nodeClientIP,
    ]);
    children.push(second.child);
    await waitFor('nftables sync', async () =>
      (await healthz(topo))?.body.backend === 'nftables' ? true : undefined,
    );
    await waitFor('healthz lastUpdated', async () =>
      (await healthz(topo))?.body.lastUpdated ? true : undefined,
    );
    t.notRegex(await topo.exec(topo.node, 'iptables-legacy-save'), /KUBE-/);
    t.regex(await topo.exec(topo.node, 'nft', ['list', 'tables']), /table ip kube-proxy/);
    t.deepEqual(Object.keys(tally(await topo.connect(WEB.clusterIP, WEB.port, 20))).sort(), ['b1', 'b2']);
    await stopProxy(second.child);

    // --cleanup removes every mode's rules.
    const cleanup = startProxy(topo, ['--cleanup']);
    const code = await new Promise((resolve) => cleanup.child.once('exit', resolve));
    t.is(code, 0, cleanup.output());
    t.notRegex(await topo.exec(topo.node, 'nft', ['list', 'tables']), /kube-proxy/);
    t.notRegex(await topo.exec(topo.node, 'iptables-legacy-save'), /KUBE-/);
    t.notRegex(await topo.exec(topo.node, 'iptables-nft-save'), /KUBE-/);
  },
);
