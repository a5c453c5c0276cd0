import test from 'ava';
import { createLogger, MemorySink } from '@nodelet/kernel';
import { ChangeTracker, RecordingRunner } from '@nodelet/proxy';
import {
  conformanceServices,
  conformanceSlices,
  conformanceTracker,
  GOLDEN_NODE,
} from '@nodelet/proxy/testing';
import { IpvsBackend } from './backend.js';
import { ipvsadmDiff, parseIpvsadmSave } from './ipvsadm.js';
import { renderIpvs, SCHEDULERS } from './render.js';

/** The conformance fixtures on the node the golden files are rendered for. */
const state = () => conformanceTracker(GOLDEN_NODE).commit();

test('each scheduler and ClientIP persistence', (t) => {
  for (const s of SCHEDULERS) {
    const r = renderIpvs(state().state, s);
    t.true(r.ipvsadm.includes(`-A -t 10.96.0.10:80 -s ${s}\n`));
    t.true(r.ipvsadm.includes(`-A -t 10.96.0.11:80 -s ${s} -p 600\n`));
  }
  const r = renderIpvs(state().state);
  t.true(r.ipvsadm.includes('-A -u 10.96.0.13:53 -s rr\n-a -u 10.96.0.13:53 -r 10.244.1.10:5353 -m -w 1\n'));
  t.true(r.ipvsadm.includes('-A -t 192.168.0.2:30080 -s rr\n'), 'node port on each node IP');
  t.false(r.ipvsadm.includes('10.96.0.12'), 'no virtual server without endpoints');
  const local = r.virtualServers.find((v) => v.address === '192.0.2.10')!;
  t.deepEqual(
    local.realServers.map((x) => x.address),
    ['10.244.1.10'],
    'externalTrafficPolicy Local: only this node',
  );
});

test('ipvsadm diff: adds, edits and deletes only what differs, and only ours', (t) => {
  const current = parseIpvsadmSave(`-A -t 10.96.0.10:80 -s lc
-a -t 10.96.0.10:80 -r 10.244.1.10:8080 -m -w 1
-a -t 10.244.9.9:80 -r 10.0.0.1:80 -m -w 1
-A -t 10.96.9.9:80 -s rr
-A -t 172.16.0.1:443 -s rr
`);
  const r = renderIpvs(state().state);
  const diff = ipvsadmDiff(
    current,
    r.virtualServers.filter((v) => v.address === '10.96.0.10'),
    (vs) => vs.address.startsWith('10.96.'),
  );
  t.deepEqual(diff, [
    '-D -t 10.96.9.9:80',
    '-E -t 10.96.0.10:80 -s rr',
    '-a -t 10.96.0.10:80 -r 10.244.2.10:8080 -m -w 1',
    '-a -t 10.96.0.10:80 -r 10.244.3.10:8080 -m -w 1',
  ]);
});

test('without IPVS in the kernel: rendered and checked, not applied, said once', async (t) => {
  const sink = new MemorySink();
  const runner = new RecordingRunner();
  const backend = new IpvsBackend({
    runner,
    logger: createLogger({ sink: sink.sink }),
    procPath: '/nonexistent/ip_vs',
  });
  const { state: s, changes } = state();
  const r1 = await backend.sync(s, changes, true);
  await backend.sync(s, changes, false);
  t.regex(r1.summary!, /^rendered only \(no IPVS in this kernel\): 11 virtual servers/);
  t.is(runner.calls.length, 0, 'no command runs');
  t.is(sink.find('this kernel has no IPVS').length, 1);
  t.truthy(backend.lastRender);
  await backend.cleanup();
  t.is(runner.calls.length, 0);
});

test('with IPVS: kube-ipvs0, ipset restore, iptables-restore, then an ipvsadm diff', async (t) => {
  const runner = new RecordingRunner((cmd, args) => {
    if (cmd === 'ip' && args[0] === 'link' && args[1] === 'show')
      return { code: 1, stdout: '', stderr: 'does not exist' };
    return undefined;
  });
  const backend = new IpvsBackend({
    runner,
    logger: createLogger({ sink: () => undefined }),
    available: true,
    scheduler: 'wrr',
  });
  const { state: s, changes } = state();
  const r = await backend.sync(s, changes, true);
  const cmds = runner.calls.map((c) => [c.command, ...c.args].join(' '));
  t.is(cmds[0], 'ip link show kube-ipvs0');
  t.is(cmds[1], 'ip link add kube-ipvs0 type dummy');
  t.true(cmds.includes('ip addr add 10.96.0.10/32 dev kube-ipvs0'));
  t.true(cmds.includes('ipset restore -exist'));
  t.true(runner.calls.find((c) => c.command === 'ipset')!.input!.includes('flush KUBE-CLUSTER-IP\n'));
  t.true(cmds.includes('iptables-restore --wait=5 --noflush'));
  const restore = runner.calls.find((c) => c.command === 'ipvsadm')!;
  t.deepEqual(restore.args, ['--restore']);
  t.true(restore.input!.startsWith('-A -u 10.96.0.13:53 -s wrr\n'));
  t.regex(r.summary!, /11 virtual servers, \d+ real servers, scheduler wrr; \d+ ipvsadm commands/);
  const ipt = runner.calls.find((c) => c.command === 'iptables-restore')!.input!;
  t.true(ipt.includes('-I PREROUTING 1 -j KUBE-SERVICES'));

  // A second, partial sync after one endpoint went away: ipset entries and real servers by difference.
  runner.calls.length = 0;
  const tracker = new ChangeTracker(GOLDEN_NODE, createLogger({ sink: () => undefined }));
  for (const x of conformanceServices()) tracker.upsertService(x);
  for (const x of conformanceSlices().filter((x) => x.metadata?.name !== 'web-fghij'))
    tracker.upsertEndpointSlice(x);
  const next = tracker.commit();
  await backend.sync(next.state, next.changes, false);
  const ipset = runner.calls.find((c) => c.command === 'ipset')?.input ?? '';
  t.false(ipset.includes('flush'), 'no flush in a partial sync');
});
