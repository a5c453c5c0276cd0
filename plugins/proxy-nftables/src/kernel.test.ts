import test from 'ava';
import { createLogger } from '@nodelet/kernel';
import { HostCommandRunner, isStandbyShell } from '@nodelet/proxy';
import {
  conformanceServices,
  conformanceSlices,
  conformanceTracker,
  FaultyRunner,
  kernelTests,
  NetnsTopology,
} from '@nodelet/proxy/testing';
import { NftablesBackend, renderNftables } from './backend.js';

// Real nftables inside network namespaces this test creates; never the host's own namespace.
const kernelTest = await kernelTests(test, 'proxy-nftables kernel tests', ['nft']);

kernelTest(
  'nftables: fresh table, incremental transaction, failed partial and full transactions keep the table, resync, cleanup',
  async (t) => {
    const topo = await NetnsTopology.create({ backends: 0 });
    t.teardown(() => topo.destroy());
    const list = () => topo.exec(topo.node, 'nft', ['list', 'table', 'ip', 'kube-proxy']);
    const runner = new FaultyRunner(new HostCommandRunner(topo.node), {
      // `nft -f -` run alone, or as the standby shell's script (which first lists what exists).
      isTransaction: (command, args) =>
        (command === 'nft' && args[0] === '-f') || isStandbyShell(command, args),
      corrupt: (input) => input + 'add rule ip kube-proxy services goto no-such-chain\n',
    });
    const backend = new NftablesBackend({ runner, logger: createLogger({ sink: () => undefined }) });
    // As the proxy does: each transaction runs in a shell started ahead (after the last sync).
    await backend.prepare();
    t.teardown(() => backend.stop());
    const tr = conformanceTracker();

    let c = tr.commit();
    const first = await backend.sync(c.state, c.changes, true);
    t.regex(first.summary!, /\(new table\)/);
    const table = await list();
    t.regex(table, /10\.96\.0\.10 \. tcp \. 80 : goto service-LPBTB7PB-conformance\/web\/tcp\/http/);
    t.regex(table, /numgen random mod 3 vmap/);

    const slice = conformanceSlices().find((s) => s.metadata?.name === 'web-fghij')!;
    tr.upsertEndpointSlice({
      ...slice,
      endpoints: [{ addresses: ['10.244.3.11'], conditions: { ready: true } }],
    });
    c = tr.commit();
    const partial = await backend.sync(c.state, c.changes, false);
    t.false(partial.full);
    t.true(partial.written <= 8, `an endpoint change is a small transaction (${partial.written} commands)`);
    const after = await list();
    t.regex(after, /dnat to 10\.244\.3\.11:8080/);
    t.notRegex(after, /web\/tcp\/http__10\.244\.3\.10\/8080/);

    tr.deleteService(conformanceServices().find((s) => s.metadata?.name === 'sticky')!);
    c = tr.commit();
    await backend.sync(c.state, c.changes, false);
    const noSticky = await list();
    t.notRegex(noSticky, /sticky/, 'a partial sync removes a service: elements, chains and affinity sets');

    tr.deleteService(conformanceServices().find((s) => s.metadata?.name === 'web')!);
    c = tr.commit();
    runner.failNext = true;
    const err = await t.throwsAsync(() => backend.sync(c.state, c.changes, false));
    t.regex(err!.message, /nft -f - exited with code 1: .*no-such-chain/);
    t.is(await list(), noSticky, 'the failed transaction changed nothing');
    // A refused full sync (streamed into nft while rendered): nft's message names the failing line.
    runner.failNext = true;
    const fullErr = await t.throwsAsync(() => backend.sync(c.state, c.changes, true));
    t.regex(
      fullErr!.message,
      /^nft -f - exited with code 1: \/dev\/stdin:\d+:.*No such file or directory \| add rule ip kube-proxy services goto no-such-chain \|/,
    );
    t.is(await list(), noSticky, 'the refused full transaction changed nothing');
    await backend.sync(c.state, c.changes, true);
    const resynced = await list();
    t.notRegex(resynced, /10\.96\.0\.10/);
    t.notRegex(
      resynced,
      /chain \S+conformance\/web\//,
      'the full sync listed the stale chains and deleted them',
    );

    await backend.cleanup();
    t.notRegex(await topo.exec(topo.node, 'nft', ['list', 'tables']), /kube-proxy/);
    await backend.cleanup();
  },
);

kernelTest(
  'nftables: a proxy started again after a service was added writes it into the existing table',
  async (t) => {
    const topo = await NetnsTopology.create({ backends: 0 });
    t.teardown(() => topo.destroy());
    const runner = new HostCommandRunner(topo.node);
    const quiet = createLogger({ sink: () => undefined });
    const tr = conformanceTracker();
    let c = tr.commit();
    await new NftablesBackend({ runner, logger: quiet }).sync(c.state, c.changes, true);

    // While no proxy runs, a service appears; the next proxy's first sync is a full one.
    tr.upsertService({
      kind: 'Service',
      metadata: { name: 'added', namespace: 'conformance' },
      spec: { clusterIP: '10.96.0.99', ports: [{ name: 'http', port: 80 }] },
    });
    tr.upsertEndpointSlice({
      kind: 'EndpointSlice',
      metadata: {
        name: 'added-1',
        namespace: 'conformance',
        labels: { 'kubernetes.io/service-name': 'added' },
      },
      addressType: 'IPv4',
      endpoints: [{ addresses: ['10.244.1.99'] }],
      ports: [{ name: 'http', port: 8080 }],
    });
    c = tr.commit();
    const restarted = new NftablesBackend({ runner, logger: quiet });
    await restarted.prepare();
    t.teardown(() => restarted.stop());
    const result = await restarted.sync(c.state, c.changes, true);
    t.notRegex(result.summary!, /new table/);
    const table = await topo.exec(topo.node, 'nft', ['list', 'table', 'ip', 'kube-proxy']);
    t.regex(table, /10\.96\.0\.99 \. tcp \. 80 : goto service-\S+-conformance\/added\/tcp\/http/);
    t.regex(table, /dnat to 10\.244\.1\.99:8080/);
    // Each chain once: as many dispatch and DNAT rules as the transaction for a new table has.
    const count = (text: string) => [/numgen random mod/g, /dnat to/g].map((r) => text.match(r)?.length);
    t.deepEqual(
      count(table),
      count(renderNftables(c.state)),
      'the chains that existed were rewritten, not doubled',
    );
  },
);
