import test from 'ava';
import {
  conformanceServices,
  conformanceSlices,
  conformanceTracker,
  GOLDEN_NODE,
} from '@nodelet/proxy/testing';
import { kernelAtLeast, renderNftables } from './backend.js';
import { NftRenderer } from './render.js';

/** The conformance fixtures on the node the golden files are rendered for. */
const loaded = () => conformanceTracker(GOLDEN_NODE);

test('one service-ips verdict map rule and numgen dispatch', (t) => {
  const text = renderNftables(loaded().commit().state);
  t.true(
    text.includes('add rule ip kube-proxy services ip daddr . meta l4proto . th dport vmap @service-ips\n'),
  );
  t.regex(
    text,
    /chain service-LPBTB7PB-conformance\/web\/tcp\/http \{\n(\t\t.*\n)*?\t\tnumgen random mod 3 vmap \{ 0 : goto endpoint-\S+ , 1 : goto endpoint-\S+ , 2 : goto endpoint-\S+ \}/,
  );
});

test('partial: one endpoint change touches that service chain, its endpoint chains, nothing else', (t) => {
  const tracker = loaded();
  const r = new NftRenderer();
  r.render({ ...tracker.commit(), full: true, fresh: true });
  const slice = conformanceSlices().find((s) => s.metadata?.name === 'web-fghij')!;
  tracker.upsertEndpointSlice({
    ...slice,
    endpoints: [{ addresses: ['10.244.3.11'], conditions: { ready: true } }],
  });
  const out = r.render({ ...tracker.commit(), full: false });
  const lines = out.text.trim().split('\n');
  t.false(
    lines.some((l) => l.includes('add element') || l.includes('delete element')),
    'no map element changes',
  );
  t.false(
    lines.some((l) => / (sticky|dns|lb-local|empty)\//.test(l)),
    'other services untouched',
  );
  t.true(
    lines.includes('flush chain ip kube-proxy endpoint-FDF4LQHO-conformance/web/tcp/http__10.244.3.10/8080'),
  );
  t.true(
    lines.includes('delete chain ip kube-proxy endpoint-FDF4LQHO-conformance/web/tcp/http__10.244.3.10/8080'),
  );
  t.true(lines.some((l) => l.trim() === 'meta l4proto tcp dnat to 10.244.3.11:8080'));
  t.is(r.render({ ...tracker.commit(), full: false }).text, '', 'no change: no transaction');
});

test('partial: a removed service deletes its elements and chains; shared cluster IPs stay while used', (t) => {
  const tracker = loaded();
  const r = new NftRenderer();
  r.render({ ...tracker.commit(), full: true, fresh: true });
  tracker.upsertService({
    ...conformanceServices().find((s) => s.metadata?.name === 'dns')!,
    spec: { clusterIP: '10.96.0.13', ports: [{ name: 'dns-tcp', protocol: 'TCP', port: 53 }] },
  });
  const out = r.render({ ...tracker.commit(), full: false });
  t.true(out.text.includes('delete element ip kube-proxy service-ips { 10.96.0.13 . udp . 53 }'));
  t.false(out.text.includes('delete element ip kube-proxy cluster-ips'), 'dns-tcp still uses 10.96.0.13');
  t.true(out.text.includes('delete chain ip kube-proxy service-5B27F7YK-conformance/dns/udp/dns'));
});

test('stale chains can be deferred for kernels before 6.2', (t) => {
  const tracker = loaded();
  const r = new NftRenderer();
  r.render({ ...tracker.commit(), full: true, fresh: true });
  tracker.deleteService(conformanceServices().find((s) => s.metadata?.name === 'terminating')!);
  const out = r.render({ ...tracker.commit(), full: false, deleteStaleNow: false });
  t.false(out.text.includes('delete chain'));
  t.deepEqual(out.deferredChains.length, 2);
  t.is(out.text.match(/^flush chain /gm)?.length, 2, 'flushed now, deleted later by the caller');
  // Handed off once: the next sync does not flush them again (they may be gone by then).
  const web = conformanceSlices().find((s) => s.metadata?.name === 'web-fghij')!;
  tracker.upsertEndpointSlice({
    ...web,
    endpoints: [{ addresses: ['10.244.3.11'], conditions: { ready: true } }],
  });
  const next = r.render({ ...tracker.commit(), full: false, deleteStaleNow: false });
  for (const c of out.deferredChains) t.false(next.text.includes(c));
  t.true(kernelAtLeast(6, 2, '6.18.44-fc'));
  t.false(kernelAtLeast(6, 2, '5.15.0-91-generic'));
});

test('partial renders delete exactly the chains and sets that went out of use; a resync finds none left', (t) => {
  const tracker = loaded();
  const r = new NftRenderer();
  r.render({ ...tracker.commit(), full: true, fresh: true });
  const web = conformanceSlices().find((s) => s.metadata?.name === 'web-fghij')!;
  const deleted = (text: string) => [...text.matchAll(/^delete chain \S+ \S+ (\S+)$/gm)].map((m) => m[1]!);
  const perChange: string[][] = [];
  for (const ip of ['10.244.3.11', '10.244.3.12', '10.244.3.13']) {
    tracker.upsertEndpointSlice({ ...web, endpoints: [{ addresses: [ip], conditions: { ready: true } }] });
    perChange.push(deleted(r.render({ ...tracker.commit(), full: false }).text));
  }
  t.true(perChange[0]!.length >= 1);
  t.is(perChange[1]!.length, 1, 'the endpoint chain of 10.244.3.11');
  t.is(perChange[2]!.length, 1, 'the endpoint chain of 10.244.3.12');
  t.is(new Set(perChange.flat()).size, perChange.flat().length, 'none deleted twice');
  tracker.deleteService(conformanceServices().find((s) => s.metadata?.name === 'sticky')!);
  const removed = r.render({ ...tracker.commit(), full: false });
  t.regex(removed.text, /^delete set /m, 'the removed service’s affinity sets go');
  // The renderer's own resync: anything stale it still believed applied would be deleted now.
  const resync = r.render({ ...tracker.commit(), full: true, fresh: false });
  t.deepEqual(
    resync.text.split('\n').filter((l) => l.startsWith('delete ')),
    ['delete set ip kube-proxy nodeport-ips'], // the setup's, for a set older versions made
  );
});
