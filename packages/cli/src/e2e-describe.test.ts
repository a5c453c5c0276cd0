import test from 'ava';
import { KubeletProcess, nodelet, pollUntil } from './test-helpers.js';

/**
 * Probes through the real command, in real time, on the fake runtime: a readiness probe that fails keeps
 * READY at 0/1; a liveness probe that fails restarts the container; `nodelet describe pod` shows both
 * probes as kubectl does and the failures and kills as events.
 */
const manifest = `apiVersion: v1
kind: Pod
metadata:
  name: probed
  labels: {app: probed}
spec:
  containers:
  - name: app
    image: busybox:1.36
    ports:
    - {name: http, containerPort: 8080}
    readinessProbe:
      exec: {command: [sh, -c, "echo not ready yet; exit 1"]}
      periodSeconds: 1
      failureThreshold: 1
    livenessProbe:
      exec: {command: [sh, -c, "echo deadlocked; exit 1"]}
      periodSeconds: 1
      failureThreshold: 2
      terminationGracePeriodSeconds: 3
`;

test('describe pod: probes, READY 0/1 from readiness, restarts and events from liveness', async (t) => {
  const k = await KubeletProcess.start(t);
  k.writeManifest('probed.yaml', manifest);

  // 60 s: on two cores busy with other work this step took over 15 s (NODELET_WAIT_LOG); 3× that is 45+.
  const row = await pollUntil(
    'probed-node1 to be restarted by its liveness probe',
    async () => (await k.rows()).find((r) => r.NAME === 'probed-node1' && /^[1-9]/.test(r.RESTARTS ?? '')),
    { timeoutMs: 60_000, intervalMs: 200 },
  );
  t.is(row.READY, '0/1', 'readiness keeps it unready');

  const described = await nodelet(['describe', 'pod', 'probed-node1', '--server', k.server]);
  t.is(described.code, 0, described.stderr);
  const text = described.stdout;
  t.log(text);
  t.regex(text, /^Name: {9}probed-node1\n/);
  t.regex(text, /\nLabels: {7}app=probed\n/);
  t.regex(
    text,
    /\n {4}Readiness: +exec \[sh -c echo not ready yet; exit 1\] delay=0s timeout=1s period=1s #success=1 #failure=1\n/,
  );
  t.regex(
    text,
    /\n {4}Liveness: +exec \[sh -c echo deadlocked; exit 1\] delay=0s timeout=1s period=1s #success=1 #failure=2\n/,
  );
  t.regex(text, /\n {4}Ready: +False\n/);
  t.regex(text, /\n {4}Restart Count: +[1-9]\d*\n/);
  t.regex(text, /\n {4}Last State: +Terminated\n {6}Reason: +Error\n {6}Exit Code: +143\n/);
  t.regex(text, /\n {2}Ready +False \n/);
  t.regex(text, /\nEvents:\n {2}Type +Reason +Age +From +Message\n/);
  t.regex(
    text,
    /\n {2}Warning +Unhealthy +\S+( \(x\d+ over \S+\))? +kubelet +Readiness probe failed: not ready yet\n/,
  );
  t.regex(
    text,
    /\n {2}Warning +Unhealthy +\S+( \(x\d+ over \S+\))? +kubelet +Liveness probe failed: deadlocked\n/,
  );
  t.regex(
    text,
    /\n {2}Normal +Killing +\S+( \(x\d+ over \S+\))? +kubelet +Container app failed liveness probe, will be restarted\n/,
  );

  const missing = await nodelet(['describe', 'pod', 'nope', '--server', k.server]);
  t.is(missing.code, 1);
  t.is(missing.stderr, 'Error from server (NotFound): pods "nope" not found\n');
  t.regex(k.stderr(), /Liveness probe failed: deadlocked/);
  t.regex(k.stderr(), /Container app failed liveness probe, will be restarted/);
  t.deepEqual(await k.stop(), { code: 0, signal: null });
});
