import { readFile, writeFile } from 'node:fs/promises';
import type { TestFn } from 'ava';
import { createLogger, RealClock } from '@nodelet/kernel';
import type { ProxyBackend } from '../backend.js';
import { ChangeTracker } from '../change-tracker.js';
import type { EndpointSlice } from '../objects.js';
import { Proxier } from '../proxier.js';
import { defaultNodeContext, type NodeContext, type ProxyState } from '../state.js';
import {
  CONFORMANCE_NODE,
  conformanceServices,
  conformanceSlices,
  EMPTY,
  type FixtureAddresses,
  STICKY,
  WEB,
} from './fixtures.js';
import { declareUnavailable, kernelUnavailable } from './kernel-tests.js';
import { NetnsTopology, tally } from './netns.js';
import { connectMany, startNameServers } from './traffic.js';

/**
 * The proxy conformance suite: the same Service/EndpointSlice fixtures against every backend.
 *
 * - `golden`: the backend's rendering of the fixtures equals a hand-reviewed golden file
 *   (`UPDATE_GOLDEN=1` rewrites it; review the diff against upstream's rules before committing).
 * - `kernel`: real traffic in network namespaces the suite creates (root and `ip netns` needed; under
 *   CI=true their absence fails, otherwise the tests are skipped with one line): a client namespace
 *   reaches three backend namespaces through ClusterIP and NodePort; 300 connections spread within
 *   statistical bounds; ClientIP affinity pins a client; an endpoint removed stops getting traffic
 *   (within the sync loop's 1 s); a service without endpoints is refused at once, not timed out.
 * - `userspace`: the same traffic checks through the userspace proxy's listen addresses (no root).
 */
export interface ConformanceOptions {
  /** Backend name in test titles: `iptables-legacy`. */
  name: string;
  golden?: { file: URL; render: (state: ProxyState) => string };
  /** A backend that programs the kernel of network namespace `netns`. */
  kernel?: (netns: string) => ProxyBackend;
  /** A userspace backend, with where it listens for a service port. */
  userspace?: () => ProxyBackend & {
    addressOf(
      servicePort: string,
      kind?: 'cluster' | 'nodePort',
    ): { address: string; port: number } | undefined;
  };
}

const quiet = createLogger({ sink: () => undefined });
/** 300 connections over 3 endpoints: each count is Binomial(300, 1/3), mean 100, σ ≈ 8.2; ±5σ. */
const DIST = { count: 300, min: 60, max: 140 };

/** The node context the golden files are rendered with. */
export const GOLDEN_NODE: NodeContext = {
  ...defaultNodeContext(CONFORMANCE_NODE),
  nodeIPs: ['192.168.0.2'],
  clusterCIDR: '10.244.0.0/16',
};

export function goldenState(): ProxyState {
  const tracker = new ChangeTracker(GOLDEN_NODE, quiet);
  for (const s of conformanceServices()) tracker.upsertService(s);
  for (const s of conformanceSlices()) tracker.upsertEndpointSlice(s);
  return tracker.commit().state;
}

function proxierFor(backend: ProxyBackend, addresses: FixtureAddresses): Proxier {
  const proxier = new Proxier(
    { backend, clock: new RealClock(), logger: quiet },
    { node: defaultNodeContext(CONFORMANCE_NODE), healthzBindAddress: '' },
  );
  for (const s of conformanceServices()) proxier.handler.upsertService(s);
  for (const s of conformanceSlices(addresses)) proxier.handler.upsertEndpointSlice(s);
  return proxier;
}

async function startSynced(proxier: Proxier): Promise<void> {
  const synced = proxier.nextSync();
  await proxier.start();
  proxier.handler.synced();
  await synced;
  const last = proxier.syncs.at(-1);
  if (!last?.ok) throw new Error(`first sync failed: ${last?.error}`);
}

/** Applies a change through the sync loop and waits for the sync that carries it (≤ minSyncPeriod). */
async function change(proxier: Proxier, apply: () => void): Promise<number> {
  const start = Date.now();
  const next = proxier.nextSync();
  apply();
  await next;
  const last = proxier.syncs.at(-1)!;
  if (!last.ok) throw new Error(`sync failed: ${last.error}`);
  return Date.now() - start;
}

function withoutThird(addresses: FixtureAddresses): EndpointSlice {
  // The second slice of `web` holds the third endpoint; emptying it removes that endpoint.
  return { ...conformanceSlices(addresses).find((s) => s.metadata?.name === 'web-fghij')!, endpoints: [] };
}

/** What the machine offers the kernel tests; check it (async) before declaring tests. */
export interface ConformanceEnv {
  /** Why the kernel tests cannot run here; undefined when they can. */
  unavailable?: string;
}

/** Checks root, `ip netns` and the named tools. Call once, before declaring any test. */
export async function conformanceEnv(tools: readonly string[] = []): Promise<ConformanceEnv> {
  const unavailable = await kernelUnavailable(tools);
  return unavailable ? { unavailable } : {};
}

/** Declares the suite's tests for one backend (synchronously, as ava requires). */
export function runProxyConformance(
  test: TestFn,
  options: ConformanceOptions,
  env: ConformanceEnv = {},
): void {
  const { name } = options;

  if (options.golden) {
    const { file, render } = options.golden;
    test(`${name}: rendered rules equal the reviewed golden file`, async (t) => {
      const actual = render(goldenState());
      if (process.env.UPDATE_GOLDEN) await writeFile(file, actual);
      t.is(actual, await readFile(file, 'utf8'));
    });
  }

  if (options.kernel) {
    const reason = env.unavailable;
    if (reason) {
      declareUnavailable(test, `${name} real-traffic conformance tests`, reason);
    } else {
      const makeBackend = options.kernel;
      test.serial(
        `${name}: real traffic through ClusterIP and NodePort, affinity, endpoint removal, rejection`,
        async (t) => {
          const topo = await NetnsTopology.create();
          const backend = makeBackend(topo.node);
          const addresses: FixtureAddresses = { backends: topo.backendIPs as [string, string, string] };
          const proxier = proxierFor(backend, addresses);
          t.teardown(async () => {
            await proxier.stop();
            await backend.cleanup().catch(() => undefined);
            await topo.destroy();
          });
          await topo.startServers(8080);
          await startSynced(proxier);

          const cluster = tally(await topo.connect(WEB.clusterIP, WEB.port, DIST.count));
          t.deepEqual(
            Object.keys(cluster).sort(),
            ['b1', 'b2', 'b3'],
            `ClusterIP: ${JSON.stringify(cluster)}`,
          );
          for (const [b, n] of Object.entries(cluster)) {
            t.true(
              n >= DIST.min && n <= DIST.max,
              `${b} got ${n} of ${DIST.count} (bounds ${DIST.min}–${DIST.max})`,
            );
          }
          const nodePort = tally(await topo.connect(topo.nodeClientIP, WEB.nodePort, 60));
          t.deepEqual(
            Object.keys(nodePort).sort(),
            ['b1', 'b2', 'b3'],
            `NodePort: ${JSON.stringify(nodePort)}`,
          );

          const sticky = tally(await topo.connect(STICKY.clusterIP, STICKY.port, 30));
          t.is(Object.keys(sticky).length, 1, `affinity: ${JSON.stringify(sticky)}`);

          const ms = await change(proxier, () =>
            proxier.handler.upsertEndpointSlice(withoutThird(addresses)),
          );
          t.true(ms <= 1500, `rules followed the endpoint change in ${ms} ms`);
          t.false(proxier.syncs.at(-1)!.full, 'an endpoint change is a partial sync');
          const after = tally(await topo.connect(WEB.clusterIP, WEB.port, 60));
          t.deepEqual(Object.keys(after).sort(), ['b1', 'b2'], `after removing b3: ${JSON.stringify(after)}`);

          // Each attempt gives up after 1 s: a dropped packet would show as ETIMEDOUT, not ECONNREFUSED.
          const refused = [
            ...(await topo.connect(EMPTY.clusterIP, EMPTY.port, 3, 1000)),
            ...(await topo.connect(topo.nodeClientIP, EMPTY.nodePort, 3, 1000)),
          ];
          t.deepEqual(refused, Array(6).fill('ECONNREFUSED'), 'no endpoints: refused at once, not timed out');

          await backend.cleanup();
        },
      );
    }
  }

  if (options.userspace) {
    const makeBackend = options.userspace;
    test.serial(
      `${name}: traffic through the listen addresses, affinity, endpoint removal, refusal`,
      async (t) => {
        const backendIPs: [string, string, string] = ['127.0.0.11', '127.0.0.12', '127.0.0.13'];
        const port = 20000 + Math.floor(Math.random() * 20000);
        const servers = await startNameServers(backendIPs, port);
        const backend = makeBackend();
        const addresses: FixtureAddresses = { backends: backendIPs, targetPort: port };
        const proxier = proxierFor(backend, addresses);
        t.teardown(async () => {
          await proxier.stop();
          await backend.cleanup();
          await servers.close();
        });
        await startSynced(proxier);
        const web = backend.addressOf(WEB.name)!;
        const cluster = tally(await connectMany(web.address, web.port, DIST.count));
        t.deepEqual(Object.keys(cluster).sort(), ['b1', 'b2', 'b3']);
        for (const [b, n] of Object.entries(cluster)) t.true(n >= DIST.min && n <= DIST.max, `${b} got ${n}`);
        const np = backend.addressOf(WEB.name, 'nodePort')!;
        t.deepEqual(Object.keys(tally(await connectMany(np.address, np.port, 30))).sort(), [
          'b1',
          'b2',
          'b3',
        ]);
        const sticky = backend.addressOf(STICKY.name)!;
        t.is(Object.keys(tally(await connectMany(sticky.address, sticky.port, 30))).length, 1);
        const ms = await change(proxier, () => proxier.handler.upsertEndpointSlice(withoutThird(addresses)));
        t.true(ms <= 1500, `followed in ${ms} ms`);
        t.deepEqual(Object.keys(tally(await connectMany(web.address, web.port, 60))).sort(), ['b1', 'b2']);
        const empty = backend.addressOf(EMPTY.name)!;
        t.deepEqual(await connectMany(empty.address, empty.port, 3, 1000), Array(3).fill('ECONNREFUSED'));
      },
    );
  }
}
