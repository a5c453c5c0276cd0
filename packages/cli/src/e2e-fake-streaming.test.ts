import { connect } from 'node:net';
import test from 'ava';
import { KubectlStream } from './e2e-containerd/kubectl-streaming.js';
import { NodeletUp, requireKubectl } from './e2e-containerd/nodelet-up.js';

/**
 * `kubectl exec` and `kubectl port-forward` reach simulated pods too: `nodelet up` on the fake runtime,
 * the real kubectl through the API server to the kubelet's 10250 and the fake runtime's streaming server.
 * exec runs the fake's command table; port-forward reaches the pod's in-process echo (bytes sent come
 * back; an HTTP GET gets a page naming the pod). Nothing leaves 127.0.0.1.
 */
const kubectl = requireKubectl(test);

const pod = `apiVersion: v1
kind: Pod
metadata: {name: sim}
spec:
  terminationGracePeriodSeconds: 1
  hostname: simhost
  containers:
  - name: main
    image: nodelet.test/busybox:1
    ports: [{containerPort: 8080}]
`;

if (kubectl) {
  let up: NodeletUp;
  test.before(async () => {
    up = await NodeletUp.start([]);
    await up.kubectlOk(['apply', '-f', '-'], pod);
    await up.kubectlOk(['wait', '--for=condition=Ready', 'pod/sim', '--timeout=60s']);
  });
  test.after.always(async () => {
    await up?.stop();
    up?.dispose();
  });

  test.serial('kubectl exec on a simulated pod runs the command table', async (t) => {
    t.is(await up.kubectlOk(['exec', 'sim', '--', 'hostname']), 'simhost\n');
    const failing = await up.kubectl(['exec', 'sim', '--', 'sh', '-c', 'exit 7']);
    t.is(failing.code, 7, failing.stderr);
  });

  test.serial('kubectl port-forward to a simulated pod reaches its echo', async (t) => {
    const forward = new KubectlStream(up, ['port-forward', '--address', '127.0.0.1', 'pod/sim', ':8080']);
    try {
      const port = Number(
        (await forward.until(/Forwarding from 127\.0\.0\.1:(\d+) -> 8080/, 'the forwarding line'))[1],
      );
      const echoed = await new Promise<string>((resolve, reject) => {
        const socket = connect(port, '127.0.0.1', () => socket.write('ping\n'));
        let got = '';
        socket.setEncoding('utf8').on('data', (d: string) => {
          got += d;
          if (got.includes('ping\n')) {
            socket.destroy();
            resolve(got);
          }
        });
        socket.on('error', reject);
        socket.setTimeout(10_000, () =>
          socket.destroy(new Error(`no echo in 10 s, got ${JSON.stringify(got)}`)),
        );
      });
      t.is(echoed, 'ping\n');
    } finally {
      await forward.stop();
    }
  });
}
