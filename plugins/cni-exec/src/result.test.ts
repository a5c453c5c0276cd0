import test from 'ava';
import { parseResult, toPodNetworkStatus } from './result.js';
import { compareVersions, selectVersion } from './version.js';

const netns = '/var/run/netns/p1';

test('a 1.0.0 result: the pod IPs are those on ifName inside the netns, IPv4 first', (t) => {
  const result = parseResult(
    {
      cniVersion: '1.0.0',
      interfaces: [
        { name: 'cni0', mac: '0a:58:0a:f4:00:01' },
        { name: 'veth1a2b', mac: '0a:58:0a:f4:00:02' },
        { name: 'eth0', mac: '0a:58:0a:f4:00:03', sandbox: netns, mtu: 1450 },
      ],
      ips: [
        { address: 'fd00:10:244::5/64', gateway: 'fd00:10:244::1', interface: 2 },
        { address: '10.244.0.5/24', gateway: '10.244.0.1', interface: 2 },
        { address: '192.168.7.1/24', interface: 0 },
      ],
      routes: [{ dst: '0.0.0.0/0', gw: '10.244.0.1' }, { dst: '::/0' }],
      dns: { nameservers: ['10.96.0.10'], search: ['svc.cluster.local'] },
      someFutureField: true,
    },
    '1.0.0',
  );
  t.is(result.interfaces[2]!.mtu, 1450);
  const status = toPodNetworkStatus('k8s-pod-network', result, 'eth0');
  t.deepEqual(status.ips, ['10.244.0.5', 'fd00:10:244::5'], 'host address excluded; IPv4 first');
  t.is(status.gateway, '10.244.0.1');
  t.deepEqual(status.dns, { nameservers: ['10.96.0.10'], search: ['svc.cluster.local'] });
  t.deepEqual(status.routes, [{ dst: '0.0.0.0/0', gw: '10.244.0.1' }, { dst: '::/0' }]);
  t.is(status.network, 'k8s-pod-network');
  t.deepEqual(toPodNetworkStatus('n', result, 'net1').ips, [], 'no addresses on another interface');
});

test('a 0.4.0 result (per-IP "version") parses to the same shape; addresses without an interface index are the pod’s', (t) => {
  const result = parseResult(
    {
      cniVersion: '0.4.0',
      interfaces: [{ name: 'eth0', sandbox: netns }],
      ips: [{ version: '4', address: '10.1.2.3/16', gateway: '10.1.0.1', interface: 0 }],
      dns: {},
    },
    '0.4.0',
  );
  t.deepEqual(result, {
    cniVersion: '0.4.0',
    interfaces: [{ name: 'eth0', sandbox: netns }],
    ips: [{ address: '10.1.2.3/16', gateway: '10.1.0.1', interface: 0 }],
    routes: [],
    dns: {},
  });
  const ipamOnly = parseResult(
    { cniVersion: '0.3.1', ips: [{ version: '4', address: '10.1.2.4/16' }] },
    '0.3.1',
  );
  t.deepEqual(toPodNetworkStatus('n', ipamOnly, 'eth0').ips, ['10.1.2.4']);
});

test('0.1.0/0.2.0 results (ip4, ip6) are converted', (t) => {
  const result = parseResult(
    {
      ip4: { ip: '10.3.0.9/24', gateway: '10.3.0.1', routes: [{ dst: '0.0.0.0/0' }] },
      ip6: { ip: 'fd00::9/64' },
      dns: { nameservers: ['1.1.1.1'] },
    },
    '0.2.0',
  );
  t.is(result.cniVersion, '0.2.0', 'a result without cniVersion is in the configuration’s version');
  t.deepEqual(result.ips, [{ address: '10.3.0.9/24', gateway: '10.3.0.1' }, { address: 'fd00::9/64' }]);
  t.deepEqual(result.routes, [{ dst: '0.0.0.0/0' }]);
  t.deepEqual(toPodNetworkStatus('n', result, 'eth0').ips, ['10.3.0.9', 'fd00::9']);
});

test('invalid results say what is wrong', (t) => {
  const bad: [unknown, RegExp][] = [
    ['x', /not a JSON object/],
    [{ cniVersion: 'one' }, /invalid cniVersion "one"/],
    [{ cniVersion: '1.0.0', ips: {} }, /ips is not a list/],
    [
      { cniVersion: '1.0.0', ips: [{ address: '10.0.0.1' }] },
      /ips\[0\]\.address "10\.0\.0\.1" is not an address in CIDR/,
    ],
    [{ cniVersion: '1.0.0', ips: [{ address: '10.0.0.1/33' }] }, /not an address in CIDR/],
    [
      { cniVersion: '1.0.0', ips: [{ address: '10.0.0.1/24', gateway: 'gw' }] },
      /ips\[0\]\.gateway "gw" is not an IP/,
    ],
    [{ cniVersion: '1.0.0', interfaces: [{}] }, /interfaces\[0\] has no name/],
    [{ cniVersion: '1.0.0', routes: [{ dst: 'default' }] }, /routes\[0\]\.dst "default"/],
    [{ cniVersion: '1.0.0', dns: { nameservers: '8.8.8.8' } }, /dns\.nameservers is not a list of strings/],
  ];
  for (const [raw, message] of bad) {
    t.throws(() => parseResult(raw, '1.0.0'), { message }, JSON.stringify(raw));
  }
});

test('versions: compared numerically; the highest supported one is selected', (t) => {
  t.true(compareVersions('0.10.0', '0.4.0') > 0);
  t.is(compareVersions('1.0.0', '1.0.0'), 0);
  t.is(selectVersion(['0.3.1', '1.0.0', '0.4.0']), '1.0.0');
  t.is(selectVersion(['1.1.0', '2.0.0']), '1.1.0');
  t.is(selectVersion(['3.0.0']), undefined);
});
