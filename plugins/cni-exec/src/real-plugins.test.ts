/**
 * cni-exec against the real CNI plugins (Debian's containernetworking-plugins in /usr/lib/cni): a bridge
 * network with host-local IPAM and a chained tuning plugin, in network namespaces these tests create and
 * delete. Needs root and `ip netns`; without them the suite is skipped with one line, except under
 * CI=true, where that is a failure.
 */
import test, { type ExecutionContext } from 'ava';
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { CniError } from '@nodelet/cni';
import { createLogger, MemorySink } from '@nodelet/kernel';
import { CniExec } from './cni-exec.js';
import { podRequest, tempLayout, writeJson } from './fixtures.js';

const BIN_DIR = '/usr/lib/cni';
const REQUIRED_PLUGINS = ['bridge', 'host-local', 'tuning'];

function missingPrerequisite(): string | undefined {
  if (process.platform !== 'linux') return 'not Linux';
  if (process.getuid?.() !== 0) return 'not running as root';
  const ip = spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' });
  if (ip.error || ip.status !== 0) return '`ip netns` is unavailable';
  const absent = REQUIRED_PLUGINS.filter((p) => !existsSync(join(BIN_DIR, p)));
  if (absent.length > 0)
    return `no ${absent.join(', ')} in ${BIN_DIR} (apt-get install containernetworking-plugins)`;
  return undefined;
}

/** Runs a command to completion; throws with its stderr when it fails. */
function run(cmd: string, args: string[]): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: 15_000 });
  if (r.error) throw r.error;
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: exit ${r.status}: ${r.stderr.trim()}`);
  return r.stdout;
}

const succeeds = (cmd: string, args: string[]) => spawnSync(cmd, args, { timeout: 15_000 }).status === 0;

const usedSubnets = new Set<number>();

/** A 10.123.<n>.0/24 that no interface on the host uses and no other test of this run took. */
function freeSubnet(): number {
  const inUse = run('ip', ['-4', '-o', 'addr', 'show']) + run('ip', ['-4', 'route', 'show']);
  for (let tries = 0; tries < 500; tries++) {
    const n = 1 + Math.floor(Math.random() * 254);
    if (!usedSubnets.has(n) && !inUse.includes(`10.123.${n}.`)) {
      usedSubnets.add(n);
      return n;
    }
  }
  throw new Error('no free 10.123.<n>.0/24 subnet');
}

interface RealNetwork {
  readonly cni: CniExec;
  readonly netns: string;
  readonly netnsPath: string;
  readonly network: string;
  readonly confPath: string;
  readonly bridge: string;
  readonly subnet: number;
  /** host-local's store of this network: one file per allocated address. */
  readonly ipamStore: string;
  readonly cacheDir: string;
  readonly logs: MemorySink;
}

/**
 * Its own network for one test: a temp confDir holding a bridge (`nlt<random>`) + host-local
 * (10.123.<n>.0/24, store in the temp dir) + tuning (mtu 1400) conflist, and a fresh netns. Everything
 * is deleted in teardown, whatever the test did.
 */
function realNetwork(
  t: ExecutionContext,
  cniVersion: string,
  edit: (conflist: Record<string, any>) => void = () => undefined,
): RealNetwork {
  const id = randomBytes(4).toString('hex');
  const bridge = `nlt${id}`;
  const netns = `nlt-${id}`;
  const network = `nlt-${id}`;
  const subnet = freeSubnet();
  const layout = tempLayout('nodelet-cni-real-');
  t.teardown(() => {
    spawnSync('ip', ['netns', 'del', netns]);
    if (succeeds('ip', ['link', 'show', bridge])) spawnSync('ip', ['link', 'del', bridge]);
    layout.cleanup();
  });
  run('ip', ['netns', 'add', netns]);
  const ipamDir = join(layout.root, 'ipam');
  const conflist = {
    cniVersion,
    name: network,
    plugins: [
      {
        type: 'bridge',
        bridge,
        isGateway: true,
        ipMasq: false,
        ipam: {
          type: 'host-local',
          ranges: [[{ subnet: `10.123.${subnet}.0/24` }]],
          routes: [{ dst: '0.0.0.0/0' }],
          dataDir: ipamDir,
        },
      },
      { type: 'tuning', mtu: 1400 },
    ],
  };
  edit(conflist);
  const confPath = join(layout.confDir, '10-nodelet-test.conflist');
  writeJson(confPath, conflist);
  const logs = new MemorySink();
  const cni = new CniExec({
    confDir: layout.confDir,
    cacheDir: layout.cacheDir,
    execTimeoutMs: 30_000,
    logger: createLogger({ sink: logs.sink, level: 'debug' }),
  });
  return {
    cni,
    netns,
    netnsPath: `/run/netns/${netns}`,
    network,
    confPath,
    bridge,
    subnet,
    ipamStore: join(ipamDir, network),
    cacheDir: layout.cacheDir,
    logs,
  };
}

/** Starts a one-shot TCP server on 0.0.0.0:port inside the netns; resolves once it listens. */
async function listenInNetns(t: ExecutionContext, netns: string, port: number): Promise<void> {
  const script = `const s = require('net').createServer((c) => { c.end('hello from the pod'); s.close(); });
s.listen(${port}, '0.0.0.0', () => console.log('listening'));`;
  const child = spawn('ip', ['netns', 'exec', netns, process.execPath, '-e', script], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.teardown(() => void child.kill('SIGKILL'));
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`listener in ${netns} not up after 10 s: ${stderr}`)),
      10_000,
    );
    child.stdout.on('data', (d: Buffer) => {
      if (d.toString().includes('listening')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`listener in ${netns} exited with ${code}: ${stderr}`));
    });
  });
}

/** Connects from the host and reads until the server closes; bounded by `timeoutMs`. */
function readFrom(host: string, port: number, timeoutMs = 5000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port });
    let data = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer from ${host}:${port} within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.on('data', (d) => (data += d.toString()));
    socket.on('end', () => {
      clearTimeout(timer);
      resolve(data);
    });
    socket.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

const inNetns = (netns: string, args: string[]) =>
  spawnSync('ip', ['netns', 'exec', netns, ...args], { encoding: 'utf8', timeout: 15_000 });

const missing = missingPrerequisite();
if (missing && process.env.CI === 'true') {
  test('real CNI plugins', (t) => t.fail(`the real CNI plugin tests must run in CI, but: ${missing}`));
} else if (missing) {
  test.skip(`real CNI plugins: skipped — ${missing}`, () => undefined);
} else {
  for (const cniVersion of ['1.0.0', '0.4.0']) {
    test.serial(
      `CNI ${cniVersion}: a pod gets an address the host reaches; CHECK passes; DEL releases it`,
      async (t) => {
        const net = realNetwork(t, cniVersion);
        const req = podRequest({ containerId: `ctr-${net.netns}`, netnsPath: net.netnsPath, podName: 'web' });

        const ready = await net.cni.status();
        t.deepEqual(ready, {
          ready: true,
          message: `network "${net.network}" (CNI ${cniVersion}) from ${net.confPath}: plugins bridge, tuning`,
        });

        const status = await net.cni.setUpPod(req);
        t.is(status.result.cniVersion, cniVersion);
        t.is(status.ips.length, 1);
        const ip = status.ips[0]!;
        t.true(ip.startsWith(`10.123.${net.subnet}.`), ip);
        t.is(status.gateway, `10.123.${net.subnet}.1`);
        t.is(status.network, net.network);
        t.deepEqual(
          status.interfaces.filter((i) => i.sandbox).map((i) => i.name),
          ['eth0'],
        );

        // The address is on eth0 inside the netns, with the MTU the chained tuning plugin set.
        const addr = inNetns(net.netns, ['ip', '-4', 'addr', 'show', 'eth0']);
        t.is(addr.status, 0, addr.stderr);
        t.true(addr.stdout.includes(`inet ${ip}/24`), addr.stdout);
        t.regex(inNetns(net.netns, ['ip', 'link', 'show', 'eth0']).stdout, /mtu 1400 /);
        t.true(existsSync(join(net.ipamStore, ip)), 'host-local holds the address');

        // The host reaches the pod over the bridge: a real TCP exchange with a server in the netns.
        const port = 20_000 + Math.floor(Math.random() * 20_000);
        await listenInNetns(t, net.netns, port);
        t.is(await readFrom(ip, port), 'hello from the pod');

        await t.notThrowsAsync(net.cni.checkPod(req));

        await net.cni.tearDownPod(req);
        t.false(existsSync(join(net.ipamStore, ip)), 'the address is released');
        t.not(inNetns(net.netns, ['ip', 'link', 'show', 'eth0']).status, 0, 'eth0 is gone from the netns');
        t.false(existsSync(join(net.cacheDir, 'results', req.containerId)), 'the cached result is gone');
        await t.notThrowsAsync(net.cni.tearDownPod(req), 'a second DEL succeeds');
      },
    );
  }

  test.serial(
    'CHECK fails, naming the plugin, when the pod interface was removed behind its back',
    async (t) => {
      const net = realNetwork(t, '1.0.0');
      const req = podRequest({ containerId: `ctr-${net.netns}`, netnsPath: net.netnsPath });
      const { ips } = await net.cni.setUpPod(req);
      run('ip', ['netns', 'exec', net.netns, 'ip', 'link', 'del', 'eth0']);
      const err = await t.throwsAsync(net.cni.checkPod(req), { instanceOf: CniError });
      t.true(
        err.message.startsWith(`CNI plugin bridge (network "${net.network}" in ${net.confPath}) failed: `),
        err.message,
      );
      t.log(err.message);
      t.is(err.plugin, 'bridge');
      t.is(err.command, 'CHECK');
      await net.cni.tearDownPod(req);
      t.false(existsSync(join(net.ipamStore, ips[0]!)), 'DEL still releases the address');
    },
  );

  test.serial('DEL after the netns is gone still releases the address', async (t) => {
    const net = realNetwork(t, '1.0.0');
    const req = podRequest({ containerId: `ctr-${net.netns}`, netnsPath: net.netnsPath });
    const { ips } = await net.cni.setUpPod(req);
    t.true(existsSync(join(net.ipamStore, ips[0]!)));
    run('ip', ['netns', 'del', net.netns]);
    await net.cni.tearDownPod(req);
    t.false(existsSync(join(net.ipamStore, ips[0]!)));
  });

  test.serial(
    'a plugin error is surfaced with the plugin, network and file; nothing is left in the netns',
    async (t) => {
      const net = realNetwork(t, '1.0.0', (conflist) => {
        conflist.plugins[0].ipam.ranges = [[{ subnet: '10.123.300.0/24' }]];
      });
      const req = podRequest({ containerId: `ctr-${net.netns}`, netnsPath: net.netnsPath });
      const err = await t.throwsAsync(net.cni.setUpPod(req), { instanceOf: CniError });
      t.regex(
        err.message,
        new RegExp(
          `^CNI plugin bridge \\(network "${net.network}" in ${net.confPath}\\) failed: invalid CIDR address: 10\\.123\\.300\\.0/24 \\(ADD, CNI error code \\d+\\)$`,
        ),
      );
      t.log(err.message);
      t.like(err, { plugin: 'bridge', network: net.network, confPath: net.confPath, command: 'ADD' });
      t.is(typeof err.cniCode, 'number');
      t.not(inNetns(net.netns, ['ip', 'link', 'show', 'eth0']).status, 0, 'no eth0 left behind');
      t.false(existsSync(join(net.cacheDir, 'results', req.containerId)));
    },
  );

  test.serial(
    'a missing plugin binary and a broken conflist: not ready, set-up refused, with the file named',
    async (t) => {
      const net = realNetwork(t, '1.0.0', (conflist) => {
        conflist.plugins.push({ type: 'nlt-no-such-plugin' });
      });
      const req = podRequest({ containerId: `ctr-${net.netns}`, netnsPath: net.netnsPath });
      const expected = `CNI plugin nlt-no-such-plugin (network "${net.network}" in ${net.confPath}): no executable nlt-no-such-plugin in /usr/lib/cni, /opt/cni/bin`;
      t.deepEqual(await net.cni.status(), { ready: false, message: expected });
      const err = await t.throwsAsync(net.cni.setUpPod(req), { instanceOf: CniError });
      t.is(err.code, 'Unavailable');
      t.is(err.message, expected);
      t.not(inNetns(net.netns, ['ip', 'link', 'show', 'eth0']).status, 0, 'nothing ran');

      writeFileSync(
        net.confPath,
        '{ "cniVersion": "1.0.0", "name": "x", "plugins": [ { "type": "bridge" ] }',
      );
      const status = await net.cni.status();
      t.false(status.ready);
      t.true(
        status.message.startsWith(`CNI network configuration ${net.confPath}: not valid JSON`),
        status.message,
      );
      const broken = await t.throwsAsync(net.cni.setUpPod(req), { instanceOf: CniError });
      t.is(broken.code, 'FailedPrecondition');
      t.is(broken.message, status.message);
    },
  );
}
