import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import type { Pod } from '@nodelet/api';
import { createCriClient } from '@nodelet/cri';
import { parsePrometheusText, sampleValue, validateAgainst } from '@nodelet/kernel/testing';
import { requireContainerd } from '@nodelet/runtime-cri/testing';
import { cadvisorMetricsText } from '../metrics/stats-metrics.js';
import { toSummary, withNodeName } from '../metrics/handlers.js';
import { summarySchema } from '../metrics/test-summary-schema.js';
import { containerdKubelet, hostNetworkPod, removeOwnPods } from '../test-containerd.js';
import { hostStatsProvider } from './host-stats-provider.js';

/**
 * The stats of containerd pods as the kubelet serves them: /stats/summary validates against the upstream
 * schema and shows a container that holds 100 MiB within 10 %; the cAdvisor CPU series of a container
 * moves when a command burns CPU in it. Skipped (one line) without containerd, failed in CI.
 */
const containerd = await requireContainerd(test);

/** Polls an async probe every 500 ms until it gives a value; throws after 90 s (a real runtime). */
async function poll<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 90_000): Promise<T> {
  for (const deadline = Date.now() + timeoutMs; ;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

if (containerd) {
  test('containerd: /stats/summary in the upstream schema, 100 MiB within 10 %, cAdvisor CPU follows the load', async (t) => {
    t.timeout(180_000);
    const dir = mkdtempSync(join(tmpdir(), 'nodelet-stats-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const client = createCriClient(containerd.endpoint, { timeoutMs: 60_000 });
    t.teardown(() => client.close());
    const nodeName = `stats-test-${process.pid}`;
    const { kubelet, source, clock } = containerdKubelet(client, dir, nodeName, {
      housekeepingPeriodMs: 3_600_000,
    });
    const run = `${process.pid}-${Date.now()}`;
    const pod = (name: string, command: string[]): Pod => hostNetworkPod(name, `${name}-${run}`, command);
    // busybox awk: a 100 MiB string, written (so resident), kept while the shell sleeps.
    const pods = [
      pod('mem', ['awk', 'BEGIN { s = sprintf("%104857600s", ""); system("sleep 3600") }']),
      pod('burn', ['sleep', '3600']),
    ];
    await kubelet.start();
    t.teardown(async () => {
      await removeOwnPods(
        kubelet,
        source,
        client,
        pods.map((p) => p.metadata!.uid!),
      );
      await kubelet.stop();
    });
    source.set(pods);
    const provider = withNodeName(
      hostStatsProvider(client.runtime, client.image, {
        nodeName,
        clock,
        rootDir: dir,
        podLogsDir: join(dir, 'logs'),
      }),
      nodeName,
    );
    const workingSet = (summary: Awaited<ReturnType<typeof provider.snapshot>>) =>
      summary.pods.find((p) => p.podRef.name === 'mem')?.containers[0]?.memory?.workingSetBytes ?? 0;
    // Settled: at least 95 MiB and the same (±1 MiB) in two readings — not the peak while awk builds it.
    let previous = 0;
    const last = await poll('the mem container to hold its 100 MiB, settled', async () => {
      const snapshot = await provider.snapshot();
      const now = workingSet(snapshot);
      const settled = now >= 95 * 2 ** 20 && Math.abs(now - previous) < 2 ** 20;
      previous = now;
      return settled ? snapshot : undefined;
    });
    const bytes = workingSet(last);
    t.true(Math.abs(bytes - 100 * 2 ** 20) <= 10 * 2 ** 20, `working set ${bytes} bytes`);
    t.deepEqual(validateAgainst(summarySchema)(toSummary(last)), []);

    const cpuOf = async () => {
      const families = parsePrometheusText(await cadvisorMetricsText(provider));
      return sampleValue(families, 'container_cpu_usage_seconds_total', { pod: 'burn', container: 'app' });
    };
    const idle = await poll('a cAdvisor CPU series of the burn container', cpuOf);
    const status = await kubelet.kubeRuntime.getPodStatus(`burn-${run}`, 'burn', 'default');
    const id = status.containers.find((c) => c.name === 'app' && c.state === 'running')!.id;
    // A bounded busy loop inside the container (its cgroup), through the CRI.
    await client.runtime.execSync({
      containerId: id,
      cmd: ['sh', '-c', 'i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done'],
      timeout: 120n,
    });
    const loaded = (await cpuOf())!;
    t.true(loaded - idle >= 0.3, `cpu ${idle} s → ${loaded} s`);
  });
}
