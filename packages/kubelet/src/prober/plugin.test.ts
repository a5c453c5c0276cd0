import test from 'ava';
import { definePlugin } from '@nodelet/kernel';
import { makePod } from '../test-harness.js';
import { startFakeNode } from './test-fake-node.js';
import { type ProbeHandler, ProbeHandlerCapability } from './probe-handler.js';

/**
 * A third party adds a probe handler by providing `probe.handler`. Here a simulation plugin answers
 * `httpGet` probes from a table instead of sockets — what a hundred simulated nodes on the fake runtime
 * want, since their pod IPs are not real — and replaces the built-in handler of that type.
 */
test('a plugin providing probe.handler replaces the built-in httpGet handler', async (t) => {
  const healthy = new Map<string, boolean>();
  const seen: string[] = [];
  const tableHandler: ProbeHandler = {
    type: 'httpGet',
    async probe(ctx) {
      const key = `${ctx.pod.metadata?.name}:${ctx.probe.httpGet?.path}`;
      seen.push(`${ctx.podIP}${ctx.probe.httpGet?.path}`);
      return healthy.get(key)
        ? { result: 'success', output: 'ok' }
        : { result: 'failure', output: `HTTP probe failed with statuscode: 503` };
    },
  };
  const probeTable = definePlugin({
    manifest: {
      name: 'probe-table',
      version: '0.1.0',
      provides: [ProbeHandlerCapability],
      requires: [],
    },
    register(ctx) {
      ctx.provide(ProbeHandlerCapability, tableHandler);
    },
  });

  // probe-table is loaded after runtime-fake, so its httpGet replaces the fake runtime's too.
  const { clock, source, kubelet } = await startFakeNode(t, [probeTable]);

  source.set([
    makePod('web', {
      containers: [
        {
          name: 'main',
          image: 'busybox:1.36',
          readinessProbe: { httpGet: { path: '/ready', port: 8080 }, periodSeconds: 1, failureThreshold: 1 },
        },
      ],
    }),
  ]);
  const ready = () => !!kubelet.getPod('default', 'web')?.status?.containerStatuses?.[0]?.ready;
  await clock.advance(2_000);
  t.false(ready());
  healthy.set('web:/ready', true);
  await clock.advance(1_000);
  t.true(ready());
  t.regex(seen[0]!, /^10\.244\.\d+\.\d+\/ready$/, 'the handler got the (simulated) pod IP');
});
