import test from 'ava';
import { createLogger } from '@nodelet/kernel';
import {
  ChangeTracker,
  type CommandRunner,
  defaultNodeContext,
  type ExecOptions,
  HostCommandRunner,
} from '@nodelet/proxy';
import {
  CONFORMANCE_NODE,
  conformanceServices,
  conformanceSlices,
  NetnsTopology,
  netnsSupport,
} from '@nodelet/proxy/testing';
import { NftablesBackend } from './backend.js';

// Real nftables inside network namespaces this test creates; never the host's own namespace.
const support = await netnsSupport();
if (!support.ok) {
  if (process.env.CI === 'true') {
    test('nftables kernel tests need root and ip netns', (t) =>
      t.fail(`CI=true but network namespaces are unavailable: ${support.reason}`));
  } else {
    console.log(`# proxy-nftables: skipping kernel tests (${support.reason})`);
  }
}
const kernelTest = support.ok ? test.serial : test.serial.skip;

class RecordingFlakyRunner implements CommandRunner {
  failNext = false;
  readonly transactions: string[] = [];
  constructor(private readonly inner: CommandRunner) {}
  run(command: string, args: readonly string[], options: ExecOptions = {}) {
    if (command === 'nft' && args[0] === '-f' && options.input) {
      this.transactions.push(options.input);
      if (this.failNext) {
        this.failNext = false;
        return this.inner.run(command, args, {
          ...options,
          input: options.input + 'add rule ip kube-proxy services goto no-such-chain\n',
        });
      }
    }
    return this.inner.run(command, args, options);
  }
}

kernelTest(
  'nftables: fresh table, incremental transaction, failed transaction keeps the table, resync, cleanup',
  async (t) => {
    const topo = await NetnsTopology.create({ backends: 0 });
    t.teardown(() => topo.destroy());
    const list = () => topo.exec(topo.node, 'nft', ['list', 'table', 'ip', 'kube-proxy']);
    const runner = new RecordingFlakyRunner(new HostCommandRunner(topo.node));
    const backend = new NftablesBackend({ runner, logger: createLogger({ sink: () => undefined }) });
    const tr = new ChangeTracker(
      defaultNodeContext(CONFORMANCE_NODE),
      createLogger({ sink: () => undefined }),
    );
    for (const s of conformanceServices()) tr.upsertService(s);
    for (const s of conformanceSlices()) tr.upsertEndpointSlice(s);

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
    await backend.sync(c.state, c.changes, true);
    t.notRegex(await list(), /10\.96\.0\.10/);

    await backend.cleanup();
    t.notRegex(await topo.exec(topo.node, 'nft', ['list', 'tables']), /kube-proxy/);
    await backend.cleanup();
  },
);
