import test from 'ava';
import { createLogger } from '@nodelet/kernel';
import { ChangeTracker, emptyChangeSet } from '@nodelet/proxy';
import {
  bulkTracker,
  conformanceServices,
  conformanceSlices,
  conformanceTracker,
  GOLDEN_NODE,
} from '@nodelet/proxy/testing';
import { cleanupRestore, renderIptables } from './backend.js';
import { parseSave } from './iptables.js';
import { JUMP_RULES, NAT_CHAINS } from './chains.js';
import { IptablesRenderer, NEED_KERNEL_STATE } from './render.js';

/** The conformance fixtures on the node the golden files are rendered for. */
const loaded = () => conformanceTracker(GOLDEN_NODE);

test('statistic probabilities are 1/(n-i) with 10 decimals; the last rule is unconditional', (t) => {
  const text = renderIptables(loaded().commit().state);
  const web = text
    .split('\n')
    .filter((l) => l.startsWith('-A KUBE-SVC-PLH5MFNFSC37FSW4 ') && l.includes('KUBE-SEP-'));
  t.deepEqual(
    web.map((l) => /--probability (\S+)/.exec(l)?.[1] ?? 'always'),
    ['0.3333333333', '0.5000000000', 'always'],
  );
});

test('partial render: one endpoint change rewrites only the chains whose rules changed', (t) => {
  const tracker = loaded();
  const r = new IptablesRenderer();
  const first = tracker.commit();
  r.applied(r.render({ ...first, full: true }));
  const slice = conformanceSlices().find((s) => s.metadata?.name === 'web-fghij')!;
  tracker.upsertEndpointSlice({
    ...slice,
    endpoints: [{ addresses: ['10.244.3.11'], conditions: { ready: true } }],
  });
  const out = r.render({ ...tracker.commit(), full: false });
  t.false(out.full);
  const lines = out.text.trim().split('\n');
  t.deepEqual(
    lines.filter((l) => l.startsWith('*')),
    ['*nat'],
    'the filter table is untouched',
  );
  t.false(lines.some((l) => l.startsWith(':KUBE-SERVICES') || l.startsWith('-A KUBE-SERVICES')));
  t.deepEqual(
    lines.filter((l) => l.startsWith(':')).map((l) => l.split(' ')[0]),
    [':KUBE-SVC-PLH5MFNFSC37FSW4', ':KUBE-SEP-D4EJHRUN6KN2QLDJ', ':KUBE-SEP-TVFR6U4XWC7LB2P7'],
    'the service chain, the new endpoint chain, the stale one; unchanged endpoint chains are not rewritten',
  );
  t.deepEqual(out.deletedChains, ['KUBE-SEP-TVFR6U4XWC7LB2P7']);
  t.true(lines.includes('-X KUBE-SEP-TVFR6U4XWC7LB2P7'));
  r.applied(out);
  t.is(r.render({ ...tracker.commit(), full: false }).text, '', 'no change: nothing to restore');
});

test('a running renderer’s full render writes the same text as a fresh renderer’s, and deletes the chains it wrote that are unused now', (t) => {
  const tracker = loaded();
  const r = new IptablesRenderer();
  const ports = tracker.commit().state.servicePorts.size;
  const slice = conformanceSlices().find((s) => s.metadata?.name === 'web-fghij')!;
  const setEndpoint = (ip: string) =>
    tracker.upsertEndpointSlice({ ...slice, endpoints: [{ addresses: [ip], conditions: { ready: true } }] });
  const fullRender = () => r.render({ ...tracker.commit(), full: true });
  const freshRender = (existingChains: string[]) =>
    new IptablesRenderer().render({
      ...tracker.commit(),
      full: true,
      existingChains: new Set(existingChains),
    });

  const first = fullRender();
  t.is(first.portsRendered, ports, 'the first full render renders every service port');
  r.applied(first);
  setEndpoint('10.244.3.11');
  r.applied(r.render({ ...tracker.commit(), full: false }));

  const again = fullRender();
  t.is(again.portsRendered, ports, 'a full render writes every service port');
  t.is(again.text, freshRender([]).text);
  r.applied(again);

  setEndpoint('10.244.3.12');
  const changed = fullRender();
  t.is(changed.text, freshRender(['KUBE-SEP-D4EJHRUN6KN2QLDJ']).text, '10.244.3.11’s chain is deleted');
  r.applied(changed);

  // A partial render after a full one compares against the rules that full render applied.
  setEndpoint('10.244.3.13');
  const partial = r.render({ ...tracker.commit(), full: false });
  t.deepEqual(
    partial.text
      .split('\n')
      .filter((l) => l.startsWith(':'))
      .map((l) => l.split(' ')[0]),
    [':KUBE-SVC-PLH5MFNFSC37FSW4', ':KUBE-SEP-OYAGTALBSBQS3T5U', ':KUBE-SEP-MXN4KHR4YYCVBVWN'],
    'only the service chain, the new endpoint chain and the stale one',
  );
  t.true(changed.text.includes(':KUBE-SEP-MXN4KHR4YYCVBVWN '), 'the stale one is 10.244.3.12’s');
  t.deepEqual(partial.deletedChains, ['KUBE-SEP-MXN4KHR4YYCVBVWN']);
  r.applied(partial);

  // Another node (its IPs, cluster CIDR): every rule is rendered anew.
  tracker.setNode({ ...GOLDEN_NODE, clusterCIDR: '10.245.0.0/16' });
  const moved = fullRender();
  t.is(moved.portsRendered, ports);
  t.true(moved.text.includes('! -s 10.245.0.0/16 -j KUBE-MARK-MASQ'));
  t.false(moved.text.includes('10.244.0.0/16'));
});

test('a streamed full render hands on the same bytes as a whole render, written into the same few blocks at any size', (t) => {
  const { state } = bulkTracker(300, 10, GOLDEN_NODE).commit();
  const kernel = { existingChains: new Set(['KUBE-SEP-STALESTALESTALE']), missingJumps: JUMP_RULES };
  const whole = new IptablesRenderer().render({ state, changes: emptyChangeSet(), full: true, ...kernel });

  const r = new IptablesRenderer();
  const streamOnce = () => {
    const copies: Buffer[] = [];
    // Each chunk is copied before the render goes on and writes into its memory again.
    const out = r.renderStreamed({ state, changes: emptyChangeSet(), full: true, ...kernel }, (c) =>
      copies.push(Buffer.from(c)),
    );
    t.deepEqual(out.chunks, [], 'a streamed output keeps no chunks');
    t.throws(() => out.text, { message: /streamed render keeps no text/ });
    t.is(out.bytes, whole.bytes);
    return Buffer.concat(copies).toString('utf8');
  };
  t.true(whole.bytes > 2_000_000 / 3, `${whole.bytes} bytes: more than the blocks of a streamed render`);
  t.is(streamOnce(), whole.text);
  const blocks = r.streamedBlockBytes;
  t.true(blocks <= 3 * 256 * 1024, `${blocks} bytes of blocks for ${whole.bytes} bytes of rules`);
  t.is(streamOnce(), whole.text, 'again, into the kept blocks');
  t.is(r.streamedBlockBytes, blocks, 'no new blocks');
});

test('a full render hands on the nat header first, then plans each port as its chains are declared', (t) => {
  const { state } = loaded().commit();
  const r = new IptablesRenderer();
  const steps = r.steps({ state, changes: emptyChangeSet(), full: true }, true);
  const first = steps.next();
  // The restore takes the table and reads what the kernel has while the ports are planned.
  t.is(
    Buffer.concat(first.value as Buffer[]).toString(),
    '*nat\n' + NAT_CHAINS.map((c) => `:${c} - [0:0]\n`).join(''),
  );
  const second = Buffer.concat(steps.next().value as Buffer[]).toString();
  t.regex(second, /^:KUBE-SVC-\w+ - \[0:0\]\n/, "then the ports' chains");
  let step = steps.next();
  while (!step.done) step = step.value === NEED_KERNEL_STATE ? steps.next({}) : steps.next();
  t.is(step.value.blocks.size, state.servicePorts.size, 'every port planned');
});

test('partial renders keep the top-level chains a full render would write, through any mix of changes', (t) => {
  const tracker = loaded();
  const r = new IptablesRenderer();
  r.applied(r.render({ ...tracker.commit(), full: true }));
  const slices = conformanceSlices();
  const web = slices.find((s) => s.metadata?.name === 'web-fghij')!;
  const sticky = conformanceServices().find((s) => s.metadata?.name === 'sticky')!;
  const stickySlices = slices.filter((s) => s.metadata?.labels?.['kubernetes.io/service-name'] === 'sticky');
  const steps: [string, () => void, boolean][] = [
    [
      'an endpoint replaced',
      () => tracker.upsertEndpointSlice({ ...web, endpoints: [{ addresses: ['10.244.3.11'] }] }),
      false,
    ],
    [
      'a service added',
      () => tracker.upsertService({ ...sticky, metadata: { ...sticky.metadata, name: 'sticky2' } }),
      true,
    ],
    [
      'another endpoint change',
      () => tracker.upsertEndpointSlice({ ...web, endpoints: [{ addresses: ['10.244.3.12'] }] }),
      false,
    ],
    [
      'a service without endpoints now',
      () => stickySlices.forEach((x) => tracker.deleteEndpointSlice(x)),
      true,
    ],
    ['endpoints back', () => stickySlices.forEach((x) => tracker.upsertEndpointSlice(x)), true],
    ['a service removed', () => tracker.deleteService(sticky), true],
  ];
  for (const [what, change, topChanges] of steps) {
    change();
    const committed = tracker.commit();
    const partial = r.render({ ...committed, full: false });
    t.false(partial.full, what);
    t.deepEqual(partial.topLevel, new IptablesRenderer().render({ ...committed, full: true }).topLevel, what);
    t.is(/^:KUBE-(SERVICES|NODEPORTS|EXTERNAL-SERVICES) /m.test(partial.text), topChanges, what);
    r.applied(partial);
  }
});

test('partial render: a removed service rewrites KUBE-SERVICES and deletes its chains', (t) => {
  const tracker = loaded();
  const r = new IptablesRenderer();
  r.applied(r.render({ ...tracker.commit(), full: true }));
  tracker.deleteService(conformanceServices().find((s) => s.metadata?.name === 'sticky')!);
  const out = r.render({ ...tracker.commit(), full: false });
  t.true(out.text.includes(':KUBE-SERVICES - [0:0]'));
  t.false(out.text.includes('10.96.0.11'));
  t.deepEqual(out.deletedChains, [
    'KUBE-SEP-6CWH5JC7R7G275YS',
    'KUBE-SEP-VZQQNXML2CEP2NIX',
    'KUBE-SEP-WWESKWK7L7UFES7Q',
    'KUBE-SVC-DNDRB5EGXPINLEBM',
  ]);
});

test('a service losing its last endpoint moves from nat DNAT to a filter REJECT', (t) => {
  const tracker = loaded();
  const r = new IptablesRenderer();
  r.applied(r.render({ ...tracker.commit(), full: true }));
  for (const s of conformanceSlices().filter(
    (s) => s.metadata?.labels?.['kubernetes.io/service-name'] === 'sticky',
  )) {
    tracker.deleteEndpointSlice(s);
  }
  const out = r.render({ ...tracker.commit(), full: false });
  t.true(
    out.text.includes(
      '-A KUBE-SERVICES -m comment --comment "conformance/sticky:http has no endpoints" -m tcp -p tcp -d 10.96.0.11 --dport 80 -j REJECT',
    ),
  );
  t.true(out.text.includes('-X KUBE-SVC-DNDRB5EGXPINLEBM'));
});

test('large clusters leave out per-endpoint comments', (t) => {
  const tracker = new ChangeTracker(GOLDEN_NODE, createLogger({ sink: () => undefined }));
  tracker.upsertService({
    kind: 'Service',
    metadata: { name: 'big', namespace: 'ns' },
    spec: { clusterIP: '10.96.5.5', ports: [{ port: 80 }] },
  });
  tracker.upsertEndpointSlice({
    kind: 'EndpointSlice',
    metadata: { name: 'big-1', namespace: 'ns', labels: { 'kubernetes.io/service-name': 'big' } },
    addressType: 'IPv4',
    endpoints: Array.from({ length: 1001 }, (_, i) => ({ addresses: [`10.1.${i >> 8}.${i & 255}`] })),
    ports: [{ port: 80 }],
  });
  const text = renderIptables(tracker.commit().state);
  t.false(/-A KUBE-SEP-\S+ -m comment/.test(text));
  t.true(text.includes('-m comment --comment "ns/big cluster IP"'));
});

test('cleanup removes our jumps and chains, and only ours', (t) => {
  const saved = parseSave(`*nat
:PREROUTING ACCEPT [0:0]
:POSTROUTING ACCEPT [0:0]
:KUBE-SERVICES - [0:0]
:KUBE-SVC-AAAA - [0:0]
:CNI-HOSTPORT - [0:0]
-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A PREROUTING -j CNI-HOSTPORT
-A KUBE-SERVICES -d 10.96.0.1/32 -j KUBE-SVC-AAAA
COMMIT
`);
  t.is(
    cleanupRestore(saved),
    `*nat
:KUBE-SERVICES - [0:0]
:KUBE-SVC-AAAA - [0:0]
-D PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-X KUBE-SERVICES
-X KUBE-SVC-AAAA
COMMIT
`,
  );
  t.is(cleanupRestore(parseSave('*filter\n:INPUT ACCEPT [0:0]\nCOMMIT\n')), '');
});
