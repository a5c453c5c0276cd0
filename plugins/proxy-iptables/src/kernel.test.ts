import test from 'ava';
import { createLogger, MemorySink } from '@nodelet/kernel';
import { HostCommandRunner } from '@nodelet/proxy';
import {
  conformanceServices,
  conformanceSlices,
  conformanceTracker,
  FaultyRunner,
  kernelTests,
  NetnsTopology,
} from '@nodelet/proxy/testing';
import { IptablesBackend } from './backend.js';
import { detectMode, type IptablesMode } from './iptables.js';

// Real iptables inside network namespaces this test creates; never the host's own namespace.
const kernelTest = await kernelTests(test, 'proxy-iptables kernel tests', [
  'iptables-legacy-restore',
  'iptables-nft-restore',
]);

/** A restore the kernel refuses: a jump to a chain that does not exist, before the last COMMIT. */
const refusedRestore = (input: string) =>
  input.replace(/COMMIT\n$/, '-A KUBE-SERVICES -j NO-SUCH-CHAIN\nCOMMIT\n');
const faulty = (netns: string) =>
  new FaultyRunner(new HostCommandRunner(netns), {
    // iptables-restore, run alone or with iptables-save beside it (`sh -c '… & exec iptables-…-restore …'`).
    isTransaction: (command, args) => /-restore\b/.test([command, ...args].join(' ')),
    corrupt: refusedRestore,
  });

const ours = (save: string) =>
  save
    .split('\n')
    .filter((l) => l.includes('KUBE-'))
    .join('\n');

for (const mode of ['legacy', 'nft'] as IptablesMode[]) {
  kernelTest(
    `iptables-${mode}: full sync, idempotent resync, partial restore, failed restore keeps the rules, cleanup`,
    async (t) => {
      const topo = await NetnsTopology.create({ backends: 0 });
      t.teardown(() => topo.destroy());
      const save = () => topo.exec(topo.node, `iptables-${mode}-save`);
      const runner = faulty(topo.node);
      const backend = new IptablesBackend({
        backend: mode,
        runner,
        logger: createLogger({ sink: () => undefined }),
      });
      // As the proxy does: each restore runs in a shell started ahead (after the last sync).
      await backend.prepare();
      t.teardown(() => backend.stop());
      const tr = conformanceTracker();

      await backend.sync(tr.commit().state, tr.commit().changes, true);
      const first = await save();
      t.regex(first, /-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES/);
      t.regex(
        first,
        /-A KUBE-SERVICES -d 10\.96\.0\.10\/32 -p tcp -m comment --comment "conformance\/web:http cluster IP" -m tcp --dport 80 -j KUBE-SVC-PLH5MFNFSC37FSW4/,
      );
      t.regex(first, /--probability 0\.33333333349 -j KUBE-SEP-ISDLTQO5J2DW6K5H/);

      const again = await backend.sync(tr.snapshot(), tr.commit().changes, true);
      t.true(again.full);
      t.is(ours(await save()), ours(first), 'a full resync changes nothing and adds no second jump');

      const slice = conformanceSlices().find((s) => s.metadata?.name === 'web-fghij')!;
      tr.upsertEndpointSlice({
        ...slice,
        endpoints: [{ addresses: ['10.244.3.11'], conditions: { ready: true } }],
      });
      const c = tr.commit();
      const partial = await backend.sync(c.state, c.changes, false);
      t.false(partial.full);
      const afterPartial = await save();
      t.regex(afterPartial, /--to-destination 10\.244\.3\.11:8080/);
      t.notRegex(afterPartial, /KUBE-SEP-TVFR6U4XWC7LB2P7/);

      tr.deleteService(conformanceServices()[1]!);
      const c2 = tr.commit();
      runner.failNext = true;
      const err = await t.throwsAsync(() => backend.sync(c2.state, c2.changes, false));
      t.regex(
        err!.message,
        /iptables-.*-restore --wait=5 --noflush exited with code 2: .*NO-SUCH-CHAIN.*; line \d+ of the input is: /,
      );
      t.is(ours(await save()), ours(afterPartial), 'the failed restore changed nothing');
      await backend.sync(c2.state, c2.changes, true);
      const afterFull = await save();
      t.notRegex(afterFull, /10\.96\.0\.11/);

      // A refused full sync (streamed, its input not kept: rendered again to quote the line) too.
      runner.failNext = true;
      const fullErr = await t.throwsAsync(() => backend.sync(c2.state, tr.commit().changes, true));
      t.regex(
        fullErr!.message,
        /iptables-.*-restore --wait=5 --noflush exited with code \d+: .*NO-SUCH-CHAIN.*; line \d+ of the input is: /s,
      );
      t.is(ours(await save()), ours(afterFull), 'the refused full sync changed nothing');

      await backend.cleanup();
      t.is(ours(await save()), '', 'cleanup leaves no KUBE- chain or jump');
      await backend.cleanup();
    },
  );
}

kernelTest('detects the back end the existing rules use, as upstream', async (t) => {
  const topo = await NetnsTopology.create({ backends: 0 });
  t.teardown(() => topo.destroy());
  const runner = new HostCommandRunner(topo.node);
  t.is((await detectMode(runner)).mode, 'nft', 'no rules at all: nft');
  await topo.exec(topo.node, 'iptables-legacy', [
    '-t',
    'filter',
    '-A',
    'INPUT',
    '-s',
    '10.9.9.9',
    '-j',
    'DROP',
  ]);
  const d = await detectMode(runner);
  t.is(d.mode, 'legacy');
  t.is(d.reason, 'existing rules: 1 legacy, 0 nft');
  await topo.exec(topo.node, 'iptables-nft', ['-t', 'mangle', '-N', 'KUBE-IPTABLES-HINT']);
  t.is((await detectMode(runner)).mode, 'nft', 'a kubelet hint chain wins');
  const sink = new MemorySink();
  const backend = new IptablesBackend({ runner, logger: createLogger({ sink: sink.sink }) });
  t.is(await backend.mode(), 'nft');
  t.regex(
    sink.lines()[0]!,
    /using iptables-nft reason="chain KUBE-IPTABLES-HINT found in iptables-nft-save -t mangle"/,
  );
});

kernelTest('a flush of the tables is noticed by the canary at the next periodic sync', async (t) => {
  const topo = await NetnsTopology.create({ backends: 0 });
  t.teardown(() => topo.destroy());
  const sink = new MemorySink();
  const backend = new IptablesBackend({
    backend: 'legacy',
    netns: topo.node,
    logger: createLogger({ sink: sink.sink }),
  });
  const tr = conformanceTracker();
  const c = tr.commit();
  await backend.sync(c.state, c.changes, true);
  const quiet = await backend.sync(tr.snapshot(), tr.commit().changes, false);
  t.false(quiet.full, 'nothing changed, canary present: nothing written');
  t.is(quiet.bytes, 0);
  for (const table of ['nat', 'filter', 'mangle']) {
    await topo.exec(topo.node, 'iptables-legacy', ['-t', table, '-F']);
    await topo.exec(topo.node, 'iptables-legacy', ['-t', table, '-X']);
  }
  const healed = await backend.sync(tr.snapshot(), tr.commit().changes, false);
  t.true(healed.full);
  t.regex(sink.lines('warn')[0]!, /KUBE-PROXY-CANARY chain is gone/);
  t.regex(
    await topo.exec(topo.node, 'iptables-legacy-save'),
    /-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES/,
  );
});
