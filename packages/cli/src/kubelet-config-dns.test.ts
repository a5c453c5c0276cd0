import { join } from 'node:path';
import test from 'ava';
import { MemorySink } from '@nodelet/kernel';
import { kubeletConfigSetup } from './test-kubelet-config.js';

// KubeletConfiguration clusterDNS, clusterDomain and resolvConf reach the kubelet (pods' DNS).

const setupOf = kubeletConfigSetup;

test('clusterDNS, clusterDomain and resolvConf (relative to the file) are used, not reported as unsupported', (t) => {
  const sink = new MemorySink();
  const { dir, setup } = setupOf(
    t,
    'clusterDNS: [10.96.0.10, "fd00::a"]\nclusterDomain: cluster.local\nresolvConf: ./resolv.conf\n',
    sink,
  );
  t.like(setup().kubelet, {
    clusterDNS: ['10.96.0.10', 'fd00::a'],
    clusterDomain: 'cluster.local',
    resolvConf: join(dir, 'resolv.conf'),
  });
  t.is(sink.find('not supported by nodelet yet').length, 0);
});

test('resolvConf "" disables the node file; without the field the kubelet uses /etc/resolv.conf', (t) => {
  t.is(setupOf(t, 'resolvConf: ""\n').setup().kubelet.resolvConf, '');
  t.is(setupOf(t, 'clusterDomain: cluster.local\n').setup().kubelet.resolvConf, undefined);
});

test('a clusterDNS entry that is not an IP is refused, naming the field', (t) => {
  t.throws(() => setupOf(t, 'clusterDNS: [10.96.0.10, kube-dns]\n').setup(), {
    message: /field "clusterDNS\[1\]": "kube-dns" is not an IP address/,
  });
  t.throws(() => setupOf(t, 'clusterDNS: 10.96.0.10\n').setup(), {
    message: /field "clusterDNS" must be a list of IP addresses/,
  });
});
