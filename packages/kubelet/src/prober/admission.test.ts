import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import test from 'ava';
import { FakeRuntime } from '@nodelet/runtime-fake';
import { eventually, tempDir, testEnv } from '../config/test-env.js';
import { Kubelet } from '../kubelet.js';

/**
 * Bad probes in static manifests are refused at admission, with the API server's message naming the
 * field — and the other manifests' pods run as if nothing happened.
 */

const manifest = (name: string, probe: string) => `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
spec:
  containers:
  - name: app
    image: busybox:1.36
    ports:
    - name: http
      containerPort: 8080
    livenessProbe:
${probe
  .trim()
  .split('\n')
  .map((l) => `      ${l}`)
  .join('\n')}
`;

test('a probe naming a missing port, a bad scheme or two handlers rejects its manifest only', async (t) => {
  const { dir, cleanup } = await tempDir();
  t.teardown(cleanup);
  await writeFile(join(dir, 'good.yaml'), manifest('good', 'httpGet: {path: /healthz, port: http}'));
  await writeFile(join(dir, 'port.yaml'), manifest('port', 'httpGet: {path: /healthz, port: metrics}'));
  await writeFile(
    join(dir, 'scheme.yaml'),
    manifest('scheme', 'httpGet: {path: /, port: 8080, scheme: FTP}'),
  );
  await writeFile(
    join(dir, 'two.yaml'),
    manifest('two', 'exec: {command: ["true"]}\ntcpSocket: {port: 8080}'),
  );
  const { clock, logger, bus, events } = testEnv();
  const runtime = new FakeRuntime({ clock, logger, config: { pullLatencyMs: 0 } });
  const kubelet = new Kubelet(
    { runtime, images: runtime, bus, clock, logger },
    {
      nodeName: 'node1',
      hostIP: '192.0.2.10',
      rootDir: join(dir, 'root'),
      podLogsDir: join(dir, 'logs'),
      podManifestPath: dir,
    },
  );
  await kubelet.start();
  t.teardown(() => kubelet.stop());
  await eventually(() => kubelet.podList().items.some((p) => p.status?.phase === 'Running'), clock, {
    stepMs: 100,
  });
  t.deepEqual(
    kubelet.podList().items.map((p) => [p.metadata?.name, p.status?.phase]),
    [['good-node1', 'Running']],
  );
  const reasons = events
    .filter((e) => e.type === '[Source] Manifest Rejected')
    .map((e) => (e as { reason: string }).reason)
    .sort();
  t.is(reasons.length, 3);
  t.regex(
    reasons[0]!,
    /port\.yaml: pod "port": spec\.containers\[0\]\.livenessProbe\.httpGet\.port: Not found: "metrics": the container has no port of that name \(its ports: "http"\)$/,
  );
  t.regex(
    reasons[1]!,
    /scheme\.yaml: pod "scheme": spec\.containers\[0\]\.livenessProbe\.httpGet\.scheme: Unsupported value: "FTP": supported values: "HTTP", "HTTPS"$/,
  );
  t.regex(
    reasons[2]!,
    /two\.yaml: pod "two": spec\.containers\[0\]\.livenessProbe\.tcpSocket: Forbidden: may not specify more than 1 handler type$/,
  );
});
