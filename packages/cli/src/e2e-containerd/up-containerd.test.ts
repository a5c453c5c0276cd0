import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { requireContainerd } from '@nodelet/runtime-cri/testing';
import { parseTable, pollUntil, type TableRow } from '../test-helpers.js';
import { parseUpArgs } from '../up-flags.js';
import {
  BUSYBOX,
  ctrContainers,
  httpGet,
  idOf,
  idsOf,
  inPodCidr,
  ipamFilesOf,
  nodeName,
  sandboxesOf,
  sweepNode,
} from './helpers.js';
import { NodeletUp, requireKubectl } from './nodelet-up.js';

/**
 * `nodelet up --runtime containerd` as a user runs it, driven by the real kubectl: a Pod applied with
 * kubectl runs on containerd, `kubectl get pods -o wide` shows it Running with its CNI address, the page
 * it serves names it, `kubectl logs` prints its output, `kubectl describe` lists its events; `kubectl
 * delete` gives the container its SIGTERM and grace period, and leaves nothing in containerd or the IPAM
 * store. The tests run in order on one pod.
 *
 * The node has a name of its own (--hostname-override): containerd is shared with other tests, and a
 * kubelet removes every sandbox labelled with its node name that none of its pods owns.
 */
const containerd = await requireContainerd(test);
const kubectl = requireKubectl(test);

test('nodelet up --hostname-override names the node; a name that is no node name is refused', (t) => {
  t.is(parseUpArgs(['--hostname-override', ' Edge-1 ']).flags.hostnameOverride, 'edge-1');
  t.is(parseUpArgs([]).flags.hostnameOverride, undefined);
  t.throws(() => parseUpArgs(['--hostname-override', '../x']), {
    message: `flag --hostname-override must be a node name (lowercase letters, digits, '-' and '.'), got "../x"`,
  });
});

if (containerd && kubectl) {
  const node = nodeName('up');
  let up: NodeletUp | undefined;
  let hostDir = '';
  const seen: { podIP?: string; sandboxId?: string; containerId?: string } = {};

  test.before(async () => {
    up = await NodeletUp.start(['--runtime', 'containerd', '--hostname-override', node]);
    hostDir = join(up.dataDir, 'host');
    mkdirSync(hostDir);
    await pollUntil(
      'the node to be Ready',
      async () => {
        const r = await up!.kubectl(['get', 'node', node, '--no-headers']);
        return /\sReady\s/.test(r.stdout) ? true : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 200, describe: () => up!.stderr().slice(-3000) },
    );
  });

  test.after.always(async () => {
    // A pod still in its TERM handler may finish; then nothing of this node may stay in containerd.
    if (hostDir) writeFileSync(join(hostDir, 'release'), '');
    await up?.stop();
    await sweepNode(containerd.endpoint, node);
    up?.dispose();
  });

  // The page names the pod (downward API). On SIGTERM the container says so in its log and in a hostPath
  // file, then holds its shutdown until the test releases it (bounded: 20 s, within the 30 s grace), so
  // the test sees the pod while it terminates without guessing how long that takes.
  const pod = `apiVersion: v1
kind: Pod
metadata:
  name: hello
  labels: {app: hello}
spec:
  containers:
  - name: web
    image: ${BUSYBOX}
    env:
    - name: POD_NAME
      valueFrom: {fieldRef: {fieldPath: metadata.name}}
    ports: [{containerPort: 8080}]
    volumeMounts: [{name: host, mountPath: /host}]
    command:
    - sh
    - -c
    - |
      mkdir -p /tmp/www
      echo "hello from $POD_NAME" > /tmp/www/index.html
      on_term() {
        echo "SIGTERM received"
        echo "$POD_NAME" > /host/sigterm
        i=0
        while [ ! -e /host/release ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i+1)); done
        kill $httpd
        exit 0
      }
      trap on_term TERM
      httpd -f -p 8080 -h /tmp/www &
      httpd=$!
      echo "serving /tmp/www as $POD_NAME"
      wait $httpd
  volumes:
  - name: host
    hostPath: {path: HOST_DIR, type: Directory}
`;

  /**
   * The Events section of `kubectl describe pod hello`, oldest first, once it lists `reason` (events are
   * recorded in the background).
   */
  async function eventsUpTo(reason: string): Promise<Array<{ reason: string; message: string }>> {
    let last = '';
    return pollUntil(
      `kubectl describe to list the ${reason} event`,
      async () => {
        const r = await up!.kubectl(['describe', 'pod', 'hello']);
        last = r.stdout + r.stderr;
        const section = r.stdout.slice(r.stdout.indexOf('\nEvents:'));
        const events = [
          ...section.matchAll(/^ {2}(?:Normal|Warning)\s+(\S+)\s+\S+(?: \(x\d+ over \S+\))?\s+\S+\s+(.*)$/gm),
        ]
          .map((m) => ({ reason: m[1]!, message: m[2]! }))
          // `nodelet up` has no cluster DNS: each pod's sandbox warns MissingClusterDNS, as upstream's
          // kubelet without clusterDNS does (the DNS tests check it); the lifecycle is what these test.
          .filter((e) => e.reason !== 'MissingClusterDNS');
        return events.some((e) => e.reason === reason) ? events : undefined;
      },
      { timeoutMs: 20_000, intervalMs: 250, describe: () => last },
    );
  }

  async function podRow(): Promise<TableRow | undefined> {
    const r = await up!.kubectl(['get', 'pods', '-o', 'wide']);
    return parseTable(r.stdout).find((row) => row.NAME === 'hello');
  }

  test.serial(
    'kubectl apply: the pod runs on containerd, Running with a pod IP; it serves its page, kubectl logs and describe show it',
    async (t) => {
      t.regex(
        up!.stdout(),
        /^nodelet control plane is serving at https:\/\/\S+ with 1 node \(containerd runtime\)$/m,
      );
      const nodes = parseTable((await up!.kubectl(['get', 'nodes', '-o', 'wide'])).stdout);
      t.like(nodes, [{ NAME: node, STATUS: 'Ready' }]);
      t.regex(nodes[0]!['CONTAINER-RUNTIME'] ?? '', /^containerd:\/\//);

      const applied = Date.now();
      const created = await up!.kubectl(['apply', '-f', '-'], pod.replace('HOST_DIR', hostDir));
      t.is(created.stdout, 'pod/hello created\n', created.stderr);
      let last: TableRow | undefined;
      const row = await pollUntil(
        'kubectl get pods to show hello Running',
        async () => {
          last = await podRow();
          return last?.STATUS === 'Running' && last.READY === '1/1' ? last : undefined;
        },
        {
          timeoutMs: 60_000,
          intervalMs: 250,
          describe: () => `${JSON.stringify(last)}\n${up!.stderr().slice(-3000)}`,
        },
      );
      t.log(`Running in kubectl get pods ${Date.now() - applied} ms after kubectl apply`);
      t.like(row, { READY: '1/1', STATUS: 'Running', RESTARTS: '0', NODE: node });
      const podIP = row.IP;
      t.true(inPodCidr(podIP), `pod IP ${podIP} is in the CNI bridge's 10.88.0.0/16`);

      const page = await pollUntil(
        `GET http://${podIP}:8080/`,
        () => httpGet(podIP!, 8080).catch(() => undefined),
        { timeoutMs: 10_000, intervalMs: 200 },
      );
      t.deepEqual(page, { status: 200, body: 'hello from hello\n' });

      const logs = await up!.kubectl(['logs', 'hello']);
      t.is(logs.stdout, 'serving /tmp/www as hello\n', logs.stderr);

      const events = await eventsUpTo('Started');
      t.deepEqual(
        events.map((e) => e.reason),
        ['Scheduled', 'Pulled', 'Created', 'Started'],
      );
      t.is(events[0]!.message, `Successfully assigned default/hello to ${node}`);
      t.is(events[3]!.message, 'Started container web');

      const json = JSON.parse((await up!.kubectl(['get', 'pod', 'hello', '-o', 'json'])).stdout) as {
        status: { podIP: string; containerStatuses: Array<{ containerID: string }> };
      };
      t.is(json.status.podIP, podIP);
      const sandboxes = await sandboxesOf(containerd.endpoint, node);
      t.is(sandboxes.length, 1, 'one sandbox of this node in containerd');
      seen.podIP = podIP;
      seen.sandboxId = sandboxes[0];
      seen.containerId = idOf(json.status.containerStatuses[0]?.containerID);
      t.deepEqual(ipamFilesOf(seen.sandboxId!), [podIP!], 'host-local holds the pod IP for the sandbox');
    },
  );

  test.serial(
    'kubectl delete: the container gets SIGTERM and its grace, the pod shows Terminating and a Killing event, then nothing is left',
    async (t) => {
      if (!seen.sandboxId) return t.fail('needs the pod of the previous test');
      const deleting = Date.now();
      const deleted = await up!.kubectl(['delete', 'pod', 'hello', '--wait=false']);
      t.is(deleted.stdout, 'pod "hello" deleted\n', deleted.stderr);

      const marker = join(hostDir, 'sigterm');
      await pollUntil(
        'the container to write its SIGTERM marker',
        async () => (existsSync(marker) ? true : undefined),
        {
          timeoutMs: 30_000,
          intervalMs: 100,
          describe: () => up!.stderr().slice(-3000),
        },
      );
      t.log(`SIGTERM reached the container ${Date.now() - deleting} ms after kubectl delete`);
      t.is(readFileSync(marker, 'utf8'), 'hello\n');

      // The container holds its shutdown until released: the pod is observably terminating.
      t.like(await podRow(), { STATUS: 'Terminating', READY: '1/1' });
      const logs = await pollUntil(
        'kubectl logs to print the SIGTERM line',
        async () => {
          const r = await up!.kubectl(['logs', 'hello']);
          return r.stdout.includes('SIGTERM') ? r.stdout : undefined;
        },
        { timeoutMs: 10_000, intervalMs: 200 },
      );
      t.is(logs, 'serving /tmp/www as hello\nSIGTERM received\n');
      const events = await eventsUpTo('Killing');
      t.deepEqual(
        events.map((e) => e.reason),
        ['Scheduled', 'Pulled', 'Created', 'Started', 'Killing'],
      );
      t.is(events[4]!.message, 'Stopping container web');

      const released = Date.now();
      writeFileSync(join(hostDir, 'release'), '');
      const gone = await up!.kubectl(['wait', '--for=delete', 'pod/hello', '--timeout=60s']);
      t.is(gone.code, 0, gone.stderr);
      t.log(`pod gone from the API ${Date.now() - released} ms after its container was let go`);
      t.is(
        (await up!.kubectl(['get', 'pods', '--no-headers'])).stderr,
        'No resources found in default namespace.\n',
      );

      await pollUntil(
        "this node's sandboxes and containers to leave containerd",
        async () => ((await idsOf(containerd.endpoint, node)).size === 0 ? true : undefined),
        { timeoutMs: 30_000, intervalMs: 250, describe: () => up!.stderr().slice(-3000) },
      );
      const ctr = await ctrContainers();
      t.false(ctr.has(seen.sandboxId), 'ctr -n k8s.io containers ls no longer lists the sandbox');
      t.false(ctr.has(seen.containerId!), 'ctr -n k8s.io containers ls no longer lists the container');
      t.deepEqual(ipamFilesOf(seen.sandboxId), [], `the IPAM store released ${seen.podIP}`);
    },
  );
}
