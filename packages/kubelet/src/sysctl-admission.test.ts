import test from 'ava';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '@nodelet/kernel';
import { readKubeletConfig } from './kubelet-config.js';
import { makePod, startHarness } from './test-harness.js';
import { normalizeSysctlName, SysctlAllowlist } from './sysctl-admission.js';

const withSysctls = (name: string, sysctls: [string, string][], extra: object = {}) =>
  makePod(name, {
    securityContext: { sysctls: sysctls.map(([n, value]) => ({ name: n, value })) },
    ...extra,
  });

test('safe sysctls are admitted; others are SysctlForbidden unless allowedUnsafeSysctls names them', (t) => {
  const none = new SysctlAllowlist();
  t.true(none.admit(withSysctls('a', [['net.ipv4.tcp_syncookies', '1']])).admit);
  t.deepEqual(none.admit(withSysctls('b', [['kernel.msgmax', '65536']])), {
    admit: false,
    reason: 'SysctlForbidden',
    message: 'forbidden sysctl: "kernel.msgmax" not allowlisted',
  });
  const some = new SysctlAllowlist(['kernel.msg*', 'net.core.somaxconn']);
  t.true(
    some.admit(
      withSysctls('c', [
        ['kernel.msgmax', '65536'],
        ['net.core.somaxconn', '1024'],
      ]),
    ).admit,
  );
  t.false(some.admit(withSysctls('d', [['kernel.sem', '250 32000 100 128']])).admit);
});

test('a net sysctl with hostNetwork, an ipc one with hostIPC: refused by namespace', (t) => {
  const list = new SysctlAllowlist(['kernel.shm*']);
  t.deepEqual(
    list.admit(withSysctls('n', [['net.ipv4.ip_local_port_range', '1024 65000']], { hostNetwork: true })),
    {
      admit: false,
      reason: 'SysctlForbidden',
      message: 'forbidden sysctl: "net.ipv4.ip_local_port_range" not allowed with host net enabled',
    },
  );
  t.regex(
    list.admit(withSysctls('i', [['kernel.shmmax', '1']], { hostIPC: true })).message ?? '',
    /not allowed with host ipc enabled/,
  );
});

test('allowedUnsafeSysctls refuses, by name, one the kernel does not namespace', (t) => {
  t.throws(() => new SysctlAllowlist(['vm.swappiness']), {
    message: /allowedUnsafeSysctls: "vm.swappiness" is not known to be namespaced/,
  });
});

test('slash-separated names are read as dotted ones', (t) => {
  t.is(normalizeSysctlName('net/ipv4/tcp_syncookies'), 'net.ipv4.tcp_syncookies');
  t.is(normalizeSysctlName('net/ipv4/conf/eno2.100/rp_filter'), 'net.ipv4.conf.eno2/100.rp_filter');
  t.is(normalizeSysctlName('kernel.shm_rmid_forced'), 'kernel.shm_rmid_forced');
});

test('through the kubelet: an unsafe sysctl or another OS fails the pod at admission; the others run', async (t) => {
  const h = await startHarness();
  t.teardown(() => h.kubelet.stop());
  const events: string[] = [];
  h.bus.subscribe('[Kubelet] Pod Event', (e) => events.push(`${e.podName} ${e.reason}: ${e.message}`));
  h.source.set([
    withSysctls('unsafe', [['kernel.msgmax', '65536']]),
    makePod('windows', { os: { name: 'windows' } }),
    withSysctls('safe', [['net.ipv4.ip_unprivileged_port_start', '0']]),
  ]);
  await h.clock.advance(2_000);
  t.like(h.status('uid-unsafe'), {
    phase: 'Failed',
    reason: 'SysctlForbidden',
    message: 'Pod was rejected: forbidden sysctl: "kernel.msgmax" not allowlisted',
  });
  t.like(h.status('uid-windows'), {
    phase: 'Failed',
    reason: 'PodOSNotSupported',
    message: "Pod was rejected: Failed to admit pod as the OS field doesn't match node OS",
  });
  t.is(h.status('uid-safe').phase, 'Running');
  t.true(events.includes('unsafe SysctlForbidden: forbidden sysctl: "kernel.msgmax" not allowlisted'));
  t.is((await h.runtime.listPodSandbox({})).items.length, 1, 'only the admitted pod got a sandbox');
});

test('a KubeletConfiguration whose allowedUnsafeSysctls lists a node-wide sysctl is refused, naming file and entry', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-sysctl-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'kubelet-config.yaml');
  const config = (list: string) =>
    `apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nallowedUnsafeSysctls: ${list}\nseccompDefault: true\n`;
  writeFileSync(file, config('["kernel.panic"]'));
  t.throws(() => readKubeletConfig(file, createLogger()), {
    message: `${file}: allowedUnsafeSysctls: "kernel.panic" is not known to be namespaced (only kernel.shm*, kernel.msg*, kernel.sem, fs.mqueue.* and net.* are); a pod cannot set it for itself`,
  });
  writeFileSync(file, config('["net.core.*", "kernel.msgmax"]'));
  t.like(readKubeletConfig(file, createLogger()), {
    allowedUnsafeSysctls: ['net.core.*', 'kernel.msgmax'],
    seccompDefault: true,
  });
});
