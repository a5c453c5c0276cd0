import test, { type ExecutionContext } from 'ava';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CniError } from '@nodelet/cni';
import { createLogger, type ErrorCode, MemorySink } from '@nodelet/kernel';
import { CniExec } from './cni-exec.js';
import {
  installFakePlugin,
  isAlive,
  podRequest,
  readRecord,
  tempLayout,
  type TempLayout,
  waitFor,
  writeJson,
} from './fixtures.js';

/** A layout with fake plugins `first`, `second` and `third` installed, and a CniExec over it. */
function setup(t: ExecutionContext, options: { execTimeoutMs?: number } = {}) {
  const layout = tempLayout();
  t.teardown(() => layout.cleanup());
  for (const name of ['first', 'second', 'third']) installFakePlugin(layout.binDir, name);
  const logs = new MemorySink();
  const cni = new CniExec({
    confDir: layout.confDir,
    binDirs: [join(layout.root, 'empty'), layout.binDir],
    cacheDir: layout.cacheDir,
    logger: createLogger({ sink: logs.sink, level: 'debug' }),
    ...options,
  });
  return { layout, cni, logs };
}

/** A conflist of fake plugins, each recording into the layout's record file. */
function conflist(
  layout: TempLayout,
  plugins: Record<string, unknown>[],
  extra: Record<string, unknown> = {},
) {
  return {
    cniVersion: '1.0.0',
    name: 'fakenet',
    ...extra,
    plugins: plugins.map((p) => ({ ...p, fake: { record: layout.record, ...(p.fake as object) } })),
  };
}

test('ADD runs every plugin in order with the spec environment, stdin and prevResult chaining', async (t) => {
  const { layout, cni } = setup(t);
  const path = join(layout.confDir, '10-fake.conflist');
  writeJson(
    path,
    conflist(layout, [
      { type: 'first', custom: { keep: [1, 2] }, fake: { ip: '10.9.0.7/24', gateway: '10.9.0.1' } },
      { type: 'second', capabilities: { portMappings: true }, fake: { nameserver: '10.9.0.53' } },
      { type: 'third', capabilities: { bandwidth: true, portMappings: false } },
    ]),
  );
  const status = await cni.setUpPod(
    podRequest({
      portMappings: [
        { hostPort: 8080, containerPort: 80 },
        { hostPort: 0, containerPort: 81 },
        { hostPort: 5353, containerPort: 53, protocol: 'UDP', hostIP: '127.0.0.1' },
      ],
      capabilityArgs: { bandwidth: { ingressRate: 1000 } },
    }),
  );

  const calls = readRecord(layout.record);
  t.deepEqual(
    calls.map((c) => `${c.command} ${c.type}`),
    ['ADD first', 'ADD second', 'ADD third'],
  );
  t.deepEqual(calls[0]!.env, {
    CNI_COMMAND: 'ADD',
    CNI_CONTAINERID: 'c0ffee00d1',
    CNI_NETNS: '/var/run/netns/fake-ns',
    CNI_IFNAME: 'eth0',
    CNI_ARGS:
      'K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0;K8S_POD_INFRA_CONTAINER_ID=c0ffee00d1;' +
      'K8S_POD_UID=2b6d5a1e-7c33-4a43-9d1f-0f2b1c9e7a10;IgnoreUnknown=1',
    CNI_PATH: `${join(layout.root, 'empty')}:${layout.binDir}`,
  });
  const [first, second, third] = calls.map((c) => c.conf);
  // The list's name and version go into every plugin; its own fields pass through unchanged.
  t.like(first, { cniVersion: '1.0.0', name: 'fakenet', type: 'first', custom: { keep: [1, 2] } });
  t.false('prevResult' in first!, 'the first ADD of a chain gets no prevResult');
  t.false('runtimeConfig' in first!);
  // Chaining: each plugin gets the previous plugin's result.
  t.is(second!.prevResult.ips[0].address, '10.9.0.7/24');
  t.deepEqual(third!.prevResult.dns, { nameservers: ['10.9.0.53'] });
  // Capability arguments go only to plugins that declare them, as runtimeConfig; `capabilities` is not sent.
  t.deepEqual(second!.runtimeConfig, {
    portMappings: [
      { hostPort: 8080, containerPort: 80, protocol: 'tcp' },
      { hostPort: 5353, containerPort: 53, protocol: 'udp', hostIP: '127.0.0.1' },
    ],
  });
  t.deepEqual(third!.runtimeConfig, { bandwidth: { ingressRate: 1000 } });
  t.false('capabilities' in second!);

  t.deepEqual(status.ips, ['10.9.0.7']);
  t.is(status.gateway, '10.9.0.1');
  t.is(status.network, 'fakenet');
  t.deepEqual(status.dns, { nameservers: ['10.9.0.53'] });
  t.deepEqual(
    status.interfaces.map((i) => i.name),
    ['fakebr0', 'eth0'],
  );
  t.true(
    existsSync(join(layout.cacheDir, 'results', 'c0ffee00d1', 'eth0.json')),
    'the final result is cached',
  );
});

test('DEL runs in reverse with the cached final result; CHECK in order with it; both idempotent where the spec says', async (t) => {
  const { layout, cni } = setup(t);
  writeJson(
    join(layout.confDir, '10-fake.conflist'),
    conflist(layout, [{ type: 'first' }, { type: 'second', fake: { nameserver: '10.9.0.53' } }]),
  );
  const req = podRequest({ ifName: 'net1' });
  await cni.setUpPod(req);
  await cni.checkPod(req);
  await cni.tearDownPod(req);

  const calls = readRecord(layout.record);
  t.deepEqual(
    calls.map((c) => `${c.command} ${c.type}`),
    ['ADD first', 'ADD second', 'CHECK first', 'CHECK second', 'DEL second', 'DEL first'],
  );
  const final = calls[1]!.conf.prevResult && {
    ...calls[1]!.conf.prevResult,
    dns: { nameservers: ['10.9.0.53'] },
  };
  for (const call of calls.slice(2)) {
    t.deepEqual(call.conf.prevResult, final, `${call.command} ${call.type} gets the final ADD result`);
    t.is(call.env.CNI_IFNAME, 'net1');
  }
  t.false(existsSync(join(layout.cacheDir, 'results', 'c0ffee00d1')), 'DEL removes the cached result');

  // A second DEL: no cached result, so the current configuration runs without prevResult.
  await cni.tearDownPod(req);
  const again = readRecord(layout.record).slice(6);
  t.deepEqual(
    again.map((c) => `${c.command} ${c.type}`),
    ['DEL second', 'DEL first'],
  );
  t.false('prevResult' in again[0]!.conf);

  const notSetUp = await t.throwsAsync(cni.checkPod(req), { instanceOf: CniError });
  t.is(notSetUp.code, 'NotFound');
  t.regex(
    notSetUp.message,
    /^the network of pod default\/web-0 \(container c0ffee00d1, interface net1\) is not set up/,
  );
});

test('DEL of a pod whose netns is gone passes an empty CNI_NETNS; DEL uses the configuration cached at ADD', async (t) => {
  const { layout, cni } = setup(t);
  const path = join(layout.confDir, '10-fake.conflist');
  writeJson(path, conflist(layout, [{ type: 'first' }, { type: 'second' }]));
  const req = podRequest({ netnsPath: join(layout.root, 'netns-that-never-existed') });
  await cni.setUpPod(req);
  // The configuration changes under the pod: a new file sorts first, the old one is gone.
  rmSync(path);
  writeJson(
    join(layout.confDir, '05-other.conflist'),
    conflist(layout, [{ type: 'third' }], { name: 'other' }),
  );
  await cni.tearDownPod(req);
  const dels = readRecord(layout.record).filter((c) => c.command === 'DEL');
  t.deepEqual(
    dels.map((c) => `${c.type} ${c.conf.name} netns=${c.env.CNI_NETNS}`),
    ['second fakenet netns=', 'first fakenet netns='],
  );
});

test('a plugin error is surfaced with plugin, network, file and the CNI {code,msg,details}; the ADD is rolled back', async (t) => {
  const { layout, cni, logs } = setup(t);
  const path = join(layout.confDir, '10-fake.conflist');
  writeJson(
    path,
    conflist(layout, [
      { type: 'first' },
      {
        type: 'second',
        fake: { fail: { ADD: { code: 7, msg: 'invalid subnet', details: 'range 10.9.0.0/31 too small' } } },
      },
      { type: 'third' },
    ]),
  );
  const err = await t.throwsAsync(cni.setUpPod(podRequest()), { instanceOf: CniError });
  t.is(
    err.message,
    `CNI plugin second (network "fakenet" in ${path}) failed: invalid subnet: range 10.9.0.0/31 too small (ADD, CNI error code 7)`,
  );
  t.is(err.code, 'FailedPrecondition');
  t.like(err, {
    plugin: 'second',
    network: 'fakenet',
    confPath: path,
    command: 'ADD',
    cniCode: 7,
    cniMsg: 'invalid subnet',
    cniDetails: 'range 10.9.0.0/31 too small',
  });
  // The spec: a delete follows every add, even a failed one — every plugin, in reverse, no prevResult.
  const calls = readRecord(layout.record);
  t.deepEqual(
    calls.map((c) => `${c.command} ${c.type}`),
    ['ADD first', 'ADD second', 'DEL third', 'DEL second', 'DEL first'],
  );
  t.false(calls.slice(2).some((c) => 'prevResult' in c.conf));
  t.false(existsSync(join(layout.cacheDir, 'results', 'c0ffee00d1')), 'nothing cached for a failed ADD');
  t.is(logs.find('CNI ADD failed; deleting the partial pod network').length, 1);
});

test('CNI error codes map to kernel codes; a plugin that dies without JSON is reported with its stderr', async (t) => {
  const { layout, cni } = setup(t);
  const path = join(layout.confDir, '10-fake.conflist');
  const cases: [Record<string, unknown>, ErrorCode, RegExp][] = [
    [
      { fail: { ADD: { code: 11, msg: 'IPAM store locked' } } },
      'Unavailable',
      /failed: IPAM store locked \(ADD, CNI error code 11\)$/,
    ],
    [{ fail: { ADD: { code: 3, msg: 'no such container' } } }, 'NotFound', /no such container/],
    [{ fail: { ADD: { code: 4, msg: 'bad CNI_IFNAME' } } }, 'InvalidInput', /bad CNI_IFNAME/],
    [
      { fail: { ADD: { code: 123, msg: 'vendor specific', details: 'vendor specific' } } },
      'Internal',
      /failed: vendor specific \(ADD/,
    ],
    [
      { crash: { ADD: 'panic: runtime error: index out of range\n' } },
      'Internal',
      /failed: ADD exited with code 2: panic: runtime error: index out of range$/,
    ],
    [{ output: 'this is not json' }, 'Internal', /failed: its ADD result is not JSON/],
    [
      { output: '{"cniVersion":"1.0.0","ips":[{"address":"10.9.0.300/24"}]}' },
      'Internal',
      /its ADD result is invalid: ips\[0\]\.address "10\.9\.0\.300\/24" is not an address in CIDR notation/,
    ],
    [
      { output: '{"cniVersion":"1.0.0","ips":[{"address":"10.9.0.3/24","interface":4}]}' },
      'Internal',
      /ips\[0\]\.interface is 4, but the result lists 0 interface/,
    ],
  ];
  for (const [fake, code, message] of cases) {
    writeJson(path, conflist(layout, [{ type: 'first', fake }]));
    const err = await t.throwsAsync(cni.setUpPod(podRequest()), { instanceOf: CniError });
    t.is(err.code, code, JSON.stringify(fake));
    t.regex(err.message, message);
    t.true(err.message.startsWith(`CNI plugin first (network "fakenet" in ${path}) failed: `));
  }
});

test('a plugin that runs past the timeout is killed with everything it started', async (t) => {
  const { layout, cni } = setup(t, { execTimeoutMs: 3000 });
  writeJson(
    join(layout.confDir, '10-fake.conflist'),
    conflist(layout, [{ type: 'first', fake: { child: true, sleepMs: { ADD: 30_000 } } }]),
  );
  const started = Date.now();
  const err = await t.throwsAsync(cni.setUpPod(podRequest()), { instanceOf: CniError });
  t.true(Date.now() - started < 10_000, 'the timeout bounds the call');
  t.is(err.code, 'DeadlineExceeded');
  t.regex(err.message, /failed: ADD did not finish within 3000 ms and was killed$/);
  const record = readRecord(layout.record, true);
  const plugin = record.find((r) => r.phase === 'start' && r.command === 'ADD')!.pid;
  const child = record.find((r) => r.phase === 'child')!.pid;
  t.true(await waitFor(() => !isAlive(plugin) && !isAlive(child), 5000), 'plugin and its child are gone');
});

test('a missing plugin binary: set-up fails before running anything, status says which and where', async (t) => {
  const { layout, cni } = setup(t);
  const path = join(layout.confDir, '10-fake.conflist');
  writeJson(path, conflist(layout, [{ type: 'first' }, { type: 'nosuch' }]));
  const err = await t.throwsAsync(cni.setUpPod(podRequest()), { instanceOf: CniError });
  const expected = `CNI plugin nosuch (network "fakenet" in ${path}): no executable nosuch in ${join(layout.root, 'empty')}, ${layout.binDir}`;
  t.is(err.message, expected);
  t.is(err.code, 'Unavailable');
  t.deepEqual(readRecord(layout.record), [], 'no plugin ran');
  t.deepEqual(await cni.status(), { ready: false, message: expected });

  writeJson(path, conflist(layout, [{ type: 'first', ipam: { type: 'no-ipam' } }]));
  const status = await cni.status();
  t.false(status.ready);
  t.regex(
    status.message,
    /^CNI plugin no-ipam \(network "fakenet" in .*\) \(the IPAM plugin of first\): no executable no-ipam in /,
  );
});

test('status: ready names the network; not ready without configuration, with broken JSON, or an unsupported version', async (t) => {
  const { layout, cni } = setup(t);
  t.deepEqual(await cni.status(), {
    ready: false,
    message: `no CNI network configuration in ${layout.confDir} (looked for *.conflist, *.conf, *.json)`,
  });
  const missingDir = new CniExec({ confDir: join(layout.root, 'absent'), binDirs: [layout.binDir] });
  t.deepEqual(await missingDir.status(), {
    ready: false,
    message: `CNI configuration directory ${join(layout.root, 'absent')} does not exist`,
  });

  const path = join(layout.confDir, '10-fake.conflist');
  writeJson(path, conflist(layout, [{ type: 'first' }, { type: 'second' }]));
  t.deepEqual(await cni.status(), {
    ready: true,
    message: `network "fakenet" (CNI 1.0.0) from ${path}: plugins first, second`,
  });

  writeFileSync(
    path,
    '{\n  "cniVersion": "1.0.0",\n  "name": "fakenet",\n  "plugins": [ { "type": "first" }, ]\n}\n',
  );
  const broken = await cni.status();
  t.false(broken.ready);
  t.true(broken.message.startsWith(`CNI network configuration ${path}: not valid JSON`), broken.message);
  t.false(broken.message.includes('\n'), 'one line');
  const err = await t.throwsAsync(cni.setUpPod(podRequest()), { instanceOf: CniError });
  t.is(err.message, broken.message, 'set-up fails with the same message');
  t.is(err.code, 'FailedPrecondition');

  installFakePlugin(layout.binDir, 'old', ['0.1.0', '0.2.0', '0.3.0', '0.3.1']);
  writeJson(path, conflist(layout, [{ type: 'old' }]));
  t.deepEqual(await cni.status(), {
    ready: false,
    message: `CNI plugin old (network "fakenet" in ${path}) does not support CNI version 1.0.0 (it supports 0.1.0, 0.2.0, 0.3.0, 0.3.1)`,
  });
});

test('configuration: the lexically first file wins; a .conf is a list of one; cniVersions picks the highest known', async (t) => {
  const { layout, cni } = setup(t);
  writeJson(
    join(layout.confDir, '20-later.conflist'),
    conflist(layout, [{ type: 'second' }], { name: 'later' }),
  );
  writeJson(join(layout.confDir, '10-single.conf'), {
    cniVersion: '0.4.0',
    name: 'single',
    type: 'first',
    fake: { record: layout.record },
  });
  writeFileSync(join(layout.confDir, '00-readme.txt'), 'not a configuration');
  const status = await cni.setUpPod(podRequest());
  t.is(status.network, 'single');
  t.is(status.result.cniVersion, '0.4.0');
  t.deepEqual(status.ips, ['10.9.0.2']);
  const [call] = readRecord(layout.record);
  t.like(call!.conf, { type: 'first', name: 'single', cniVersion: '0.4.0' });
  await cni.tearDownPod(podRequest());

  rmSync(join(layout.confDir, '10-single.conf'));
  writeJson(
    join(layout.confDir, '15-multi.conflist'),
    conflist(layout, [{ type: 'first' }], {
      cniVersion: undefined,
      cniVersions: ['0.4.0', '1.0.0', '9.9.9'],
    }),
  );
  const ready = await cni.status();
  t.true(ready.ready, ready.message);
  t.regex(ready.message, /^network "fakenet" \(CNI 1\.0\.0\) from .*15-multi\.conflist/);
});

test('configuration errors name the file and the field', async (t) => {
  const { layout, cni } = setup(t);
  const cases: [string, unknown, RegExp][] = [
    ['10-a.conflist', { cniVersion: '1.0.0', name: 'n', plugins: [] }, /: field "plugins" is empty/],
    ['10-a.conflist', { cniVersion: '1.0.0', plugins: [{ type: 'first' }] }, /: field "name" is required$/],
    [
      '10-a.conflist',
      { cniVersion: '1.0.0', name: 'bad name', plugins: [{ type: 'x' }] },
      /network name "bad name" must start/,
    ],
    [
      '10-a.conflist',
      { cniVersion: '1.0.0', name: 'n', plugins: [{ type: '../../bin/sh' }] },
      /field "plugins\[0\]\.type" \("\.\.\/\.\.\/bin\/sh"\) must be a file name/,
    ],
    ['10-a.conflist', { name: 'n', plugins: [{ type: 'first' }] }, /: field "cniVersion" is required$/],
    [
      '10-a.conflist',
      { cniVersion: '2.0.0', name: 'n', plugins: [{ type: 'first' }] },
      /: CNI version 2\.0\.0 is not supported \(nodelet speaks 0\.1\.0, .*1\.1\.0\)$/,
    ],
    [
      '10-a.conf',
      { cniVersion: '1.0.0', name: 'n', plugins: [{ type: 'first' }] },
      /has a "plugins" list, which belongs in a \.conflist file/,
    ],
    ['10-a.conf', '[1, 2]', /: not a JSON object$/],
  ];
  for (const [file, content, message] of cases) {
    rmSync(layout.confDir, { recursive: true, force: true });
    mkdirSync(layout.confDir);
    const path = join(layout.confDir, file);
    writeJson(path, content);
    const status = await cni.status();
    t.false(status.ready);
    t.true(status.message.startsWith(`CNI network configuration ${path}: `), status.message);
    t.regex(status.message, message);
  }
});

test('a second ADD of the same attachment is refused; requests are validated', async (t) => {
  const { layout, cni } = setup(t);
  writeJson(join(layout.confDir, '10-fake.conflist'), conflist(layout, [{ type: 'first' }]));
  await cni.setUpPod(podRequest());
  const twice = await t.throwsAsync(cni.setUpPod(podRequest()), { instanceOf: CniError });
  t.is(twice.code, 'AlreadyExists');
  t.regex(twice.message, /already set up on network "fakenet"; tear it down first$/);
  // Another interface of the same pod is another attachment.
  await t.notThrowsAsync(cni.setUpPod(podRequest({ ifName: 'net1' })));

  const invalid: [Partial<Parameters<CniExec['setUpPod']>[0]>, RegExp][] = [
    [{ containerId: '' }, /container id "" must start/],
    [{ containerId: '-abc' }, /container id "-abc" must start/],
    [{ ifName: 'a-very-long-ifname' }, /interface name "a-very-long-ifname" must be 1–15 characters/],
    [{ ifName: 'eth/0' }, /interface name "eth\/0"/],
    [{ netnsPath: '' }, /netnsPath is required/],
    [{ podName: 'a;b' }, /K8S_POD_NAME "a;b" cannot be passed in CNI_ARGS/],
  ];
  for (const [overrides, message] of invalid) {
    const err = await t.throwsAsync(cni.setUpPod(podRequest({ containerId: 'other', ...overrides })), {
      instanceOf: CniError,
    });
    t.is(err.code, 'InvalidInput');
    t.regex(err.message, message);
  }
  await t.notThrowsAsync(cni.tearDownPod(podRequest({ netnsPath: '' })), 'DEL needs no netns');
});

test('operations on one container run one at a time; CHECK honours disableCheck and the version', async (t) => {
  const { layout, cni } = setup(t);
  const path = join(layout.confDir, '10-fake.conflist');
  writeJson(path, conflist(layout, [{ type: 'first', fake: { sleepMs: { ADD: 300 } } }]));
  const req = podRequest();
  await Promise.all([cni.setUpPod(req), cni.tearDownPod(req)]);
  const record = readRecord(layout.record, true).filter((r) => r.phase !== 'child');
  t.deepEqual(
    record.map((r) => `${r.phase} ${r.command}`),
    ['start ADD', 'end ADD', 'start DEL', 'end DEL'],
  );

  writeJson(path, conflist(layout, [{ type: 'first' }], { disableCheck: true }));
  await cni.setUpPod(req);
  const before = readRecord(layout.record).length;
  await cni.checkPod(req);
  t.is(readRecord(layout.record).length, before, 'disableCheck: no plugin runs');
  await cni.tearDownPod(req);

  writeJson(path, conflist(layout, [{ type: 'first' }], { cniVersion: '0.3.1' }));
  await cni.setUpPod(req);
  const old = await t.throwsAsync(cni.checkPod(req), { instanceOf: CniError });
  t.is(old.code, 'Unimplemented');
  t.is(old.message, `network "fakenet" in ${path} uses CNI 0.3.1; CHECK needs 0.4.0 or later`);
  await cni.tearDownPod(req);
  const del = readRecord(layout.record).at(-1)!;
  t.false('prevResult' in del.conf, 'before 0.4.0, DEL gets no prevResult');
});

test('a CHECK failure names the plugin', async (t) => {
  const { layout, cni } = setup(t);
  const path = join(layout.confDir, '10-fake.conflist');
  writeJson(
    path,
    conflist(layout, [
      { type: 'first' },
      { type: 'second', fake: { fail: { CHECK: { code: 100, msg: 'eth0 is missing', details: '' } } } },
    ]),
  );
  await cni.setUpPod(podRequest());
  const err = await t.throwsAsync(cni.checkPod(podRequest()), { instanceOf: CniError });
  t.is(
    err.message,
    `CNI plugin second (network "fakenet" in ${path}) failed: eth0 is missing (CHECK, CNI error code 100)`,
  );
  t.is(err.cniDetails, undefined);
});
