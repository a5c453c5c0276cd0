import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import type { Pod } from '@nodelet/api';
import { CriRuntime } from '@nodelet/cri';
import { createLogger, MemorySink, VirtualClock } from '@nodelet/kernel';
import { KubeletCapability, type PodSource } from '@nodelet/kubelet';
import { type ProxyBackend, ProxyBackendCapability, ProxyCapability } from '@nodelet/proxy';
import { conformanceServices, conformanceSlices } from '@nodelet/proxy/testing';
import { BehaviorSubject } from 'rxjs';
import { stringify } from 'yaml';
import { buildKernel } from './kubelet-command.js';
import { resolveKubeletSetup } from './kubelet-setup.js';
import { parseProxyArgs, resolveProxySetup } from './proxy-command.js';
import { buildProxyKernel } from './proxy-kernel.js';

/**
 * Third-party plugins, as a user installs them: a directory outside the repository (a package.json and
 * an .mjs module that imports nothing of nodelet: its manifest names capabilities as data), named only
 * in a config file's `plugins:` list. No nodelet code knows them.
 */
function outside(t: { teardown: (fn: () => void) => void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-third-party-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function writePackage(dir: string, name: string, source: string): string {
  const root = join(dir, name);
  mkdirSync(root, { recursive: true });
  writeFileSync(
    join(root, 'package.json'),
    JSON.stringify({ name, version: '1.0.0', type: 'module', main: 'plugin.mjs' }),
  );
  writeFileSync(join(root, 'plugin.mjs'), source);
  return root;
}

/** Writes `dir`/nodelet.yaml: a NodeletConfiguration with these fields. */
function nodeletYaml(dir: string, fields: Record<string, unknown>): string {
  const file = join(dir, 'nodelet.yaml');
  writeFileSync(
    file,
    stringify({ apiVersion: 'nodelet.dev/v1alpha1', kind: 'NodeletConfiguration', ...fields }),
  );
  return file;
}

/** A probe handler that answers `httpGet` probes from its configuration's table instead of sockets. */
const tableProbes = `
const probeHandler = { id: 'probe.handler', version: 1 };
export default {
  manifest: { name: 'table-probes', version: '1.0.0', provides: [probeHandler], requires: [],
    configSchema: { type: 'object', additionalProperties: false, required: ['healthy'],
      properties: { healthy: { type: 'array', items: { type: 'string' } } } } },
  register(ctx) {
    ctx.provide(probeHandler, {
      type: 'httpGet',
      async probe({ probe }) {
        const path = probe.httpGet.path;
        return ctx.config.healthy.includes(path)
          ? { result: 'success', output: 'listed healthy' }
          : { result: 'failure', output: 'HTTP probe failed with statuscode: 503 (' + path + ' is not in the table)' };
      },
    });
  },
};
`;

const probed = (name: string, path: string): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'default', uid: `uid-${name}` },
  spec: {
    containers: [
      {
        name: 'main',
        image: 'busybox:1.36',
        readinessProbe: { httpGet: { path, port: 8080 }, periodSeconds: 1, failureThreshold: 1 },
      },
    ],
  },
});

test('a probe handler from a directory outside the repository, named only in plugins:, answers the kubelet’s probes', async (t) => {
  const dir = outside(t);
  const plugin = writePackage(dir, 'table-probes', tableProbes);
  const file = nodeletYaml(dir, {
    runtime: 'fake',
    plugins: [{ use: plugin, config: { healthy: ['/ready'] } }],
  });
  const sink = new MemorySink();
  const clock = new VirtualClock();
  const logger = createLogger({ sink: sink.sink, now: () => clock.now() });
  const setup = resolveKubeletSetup(
    { config: file, rootDir: join(dir, 'root'), readOnlyPort: 0, port: 0 },
    { cwd: dir, hostname: 'sim-1', isRoot: false, homeDir: dir, ipv4: ['192.0.2.1'], logger },
  );
  // The pods come from a source of the test's own (a static-manifest directory reads files in real time).
  const pods = new BehaviorSubject<Pod[]>([]);
  const source: PodSource = {
    name: 'api',
    snapshots$: pods.asObservable(),
    originOf: () => 'test',
    start() {},
    stop() {},
  };
  setup.kubelet.sources = [source];
  const kernel = await buildKernel(setup, logger, { clock });
  await kernel.start();
  t.teardown(() => kernel.stop());
  const kubelet = kernel.get(KubeletCapability);
  pods.next([probed('listed', '/ready'), probed('unlisted', '/other')]);
  await clock.advance(3_000);
  const ready = (name: string) => kubelet.getPod('default', name)?.status?.containerStatuses?.[0]?.ready;
  // The fake runtime answers httpGet probes of its pods as healthy; the plugin, loaded after it, decides.
  t.true(ready('listed'));
  t.false(ready('unlisted'));
});

/** A volume plugin for a source nodelet does not make itself (`nfs`): it writes a file from its configuration. */
const fakeNfs = `
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
const volumePlugin = { id: 'volume.plugin', version: 1 };
export default {
  manifest: { name: 'fake-nfs', version: '1.0.0', provides: [volumePlugin], requires: [],
    configSchema: { type: 'object', additionalProperties: false, required: ['motd'],
      properties: { motd: { type: 'string' } } } },
  register(ctx) {
    ctx.provide(volumePlugin, {
      name: 'example.com/fake-nfs',
      source: 'nfs',
      async setUp({ volume, dir }) {
        await writeFile(join(dir, 'motd'), ctx.config.motd + ' from ' + volume.nfs.server + ':' + volume.nfs.path);
        return dir;
      },
    });
  },
};
`;

test('a volume plugin from a directory outside the repository, named only in plugins:, makes a new volume source a pod mounts', async (t) => {
  const dir = outside(t);
  const plugin = writePackage(dir, 'fake-nfs', fakeNfs);
  const file = nodeletYaml(dir, { runtime: 'fake', plugins: [{ use: plugin, config: { motd: 'hello' } }] });
  const clock = new VirtualClock();
  const logger = createLogger({ sink: new MemorySink().sink, now: () => clock.now() });
  const setup = resolveKubeletSetup(
    { config: file, rootDir: join(dir, 'root'), readOnlyPort: 0, port: 0 },
    { cwd: dir, hostname: 'sim-1', isRoot: false, homeDir: dir, ipv4: ['192.0.2.1'], logger },
  );
  const pods = new BehaviorSubject<Pod[]>([]);
  setup.kubelet.sources = [
    { name: 'api', snapshots$: pods.asObservable(), originOf: () => 'test', start() {}, stop() {} },
  ];
  const kernel = await buildKernel(setup, logger, { clock });
  await kernel.start();
  t.teardown(() => kernel.stop());
  const kubelet = kernel.get(KubeletCapability);
  pods.next([
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'shared', namespace: 'default', uid: 'uid-shared' },
      spec: {
        containers: [
          { name: 'main', image: 'busybox:1.36', volumeMounts: [{ name: 'share', mountPath: '/share' }] },
        ],
        volumes: [{ name: 'share', nfs: { server: 'nfs.example', path: '/exports/team' } }],
      },
    },
  ]);
  await clock.advance(3_000);
  t.truthy(kubelet.getPod('default', 'shared')?.status?.containerStatuses?.[0]?.state?.running);
  const volume = join(dir, 'root', 'pods', 'uid-shared', 'volumes', 'example.com~fake-nfs', 'share');
  t.is(readFileSync(join(volume, 'motd'), 'utf8'), 'hello from nfs.example:/exports/team');
  const runtime = kernel.get(CriRuntime);
  const { containers } = await runtime.listContainers({});
  const { status } = await runtime.containerStatus({ containerId: containers[0]!.id, verbose: false });
  t.like(status?.mounts[0], { containerPath: '/share', hostPath: volume });
});

/** A proxy backend that records each sync it is driven with. */
const recordingBackend = `
export const syncs = [];
export default {
  manifest: { name: 'recording-backend', version: '1.0.0', provides: [{ id: 'proxy.backend', version: 1 }], requires: [],
    configSchema: { type: 'object', additionalProperties: false, properties: { label: { type: 'string' } } } },
  register(ctx) {
    ctx.provide({ id: 'proxy.backend', version: 1 }, {
      name: ctx.config.label ?? 'recording',
      syncs,
      async sync(state, changes, full) {
        syncs.push({ full, servicePorts: state.servicePorts.size, changed: changes.updated.size });
        return { full, written: 0 };
      },
      async cleanup() {},
    });
  },
};
`;

test('a proxy backend from a directory outside the repository, named only in proxy.plugins:, is driven with a sync', async (t) => {
  const dir = outside(t);
  const plugin = writePackage(dir, 'recording-backend', recordingBackend);
  writeFileSync(
    join(dir, 'services.yaml'),
    [...conformanceServices(), ...conformanceSlices()].map((o) => stringify(o)).join('---\n'),
  );
  const file = nodeletYaml(dir, {
    proxy: {
      services: './services.yaml',
      healthzBindAddress: '',
      plugins: [{ use: plugin, config: { label: 'recorder' } }],
    },
  });
  const logger = createLogger({ sink: new MemorySink().sink });
  const setup = await resolveProxySetup(
    parseProxyArgs(['--config', file, '--hostname-override', 'node-a']),
    logger,
    { has: () => true },
  );
  t.is(setup.mode, 'recording-backend', 'no mode asked for: the listed backend is the backend');
  t.regex(setup.modeReason ?? '', /proxy\.plugins\[0\]\.use" provides proxy\.backend$/);
  const kernel = await buildProxyKernel(setup, logger);
  await kernel.start();
  t.teardown(() => kernel.stop());
  const proxier = kernel.get(ProxyCapability);
  const backend = kernel.get(ProxyBackendCapability) as ProxyBackend & { syncs: unknown[] };
  if (backend.syncs.length === 0) await proxier.nextSync();
  t.is(proxier.backendName, 'recorder');
  t.deepEqual(backend.syncs, [{ full: true, servicePorts: 8, changed: 8 }]);
});

test('config errors of two plugins are reported at once, each naming the file and the field', async (t) => {
  const dir = outside(t);
  const plugin = writePackage(dir, 'table-probes', tableProbes);
  const file = nodeletYaml(dir, {
    plugins: [
      { use: 'fake', config: { pullLatencyMs: -1 } },
      { use: plugin, config: { healthy: '/ready' } },
    ],
  });
  const logger = createLogger({ sink: new MemorySink().sink });
  const setup = resolveKubeletSetup(
    { config: file, rootDir: join(dir, 'root'), readOnlyPort: 0, port: 0 },
    { cwd: dir, hostname: 'n', isRoot: false, homeDir: dir, ipv4: [], logger },
  );
  const kernel = await buildKernel(setup, logger);
  await t.throwsAsync(kernel.start(), {
    name: 'ConfigError',
    message:
      `${file}: plugins[0].config: field "pullLatencyMs" must be >= 0\n` +
      `${file}: plugins[1].config: field "healthy" must be of type array`,
  });
});
