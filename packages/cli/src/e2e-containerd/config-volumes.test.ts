import test from 'ava';
import { requireContainerd } from '@nodelet/runtime-cri/testing';
import { pollUntil } from '../test-helpers.js';
import { BUSYBOX, nodeName, sweepNode } from './helpers.js';
import { NodeletUp, requireKubectl, run } from './nodelet-up.js';

/**
 * Configuration and identity reach containerd pods of `nodelet up`, driven by the real kubectl: the
 * docs' "Configure a Pod to Use a ConfigMap" (env and volume forms), a ConfigMap change reaching a
 * running container through the atomic `..data` swap, Secret file modes, downwardAPI labels that update,
 * and the kube-api-access token a pod uses to authenticate to the API server.
 *
 * The API server binds the CNI bridge's host address (10.88.0.1), which pods reach; the `kubernetes`
 * EndpointSlice names it. Traffic stays on the machine: kubectl and the pods talk to that address only.
 */
const containerd = await requireContainerd(test);
const kubectl = requireKubectl(test);

const BRIDGE = 'nodelet0';
/** busybox with the host's openssl, which its wget runs for https (scripts/images/import.sh). */
const BUSYBOX_OPENSSL = 'nodelet.test/busybox-openssl:1';
const GATEWAY = '10.88.0.1';

/** The bridge and its gateway address as the CNI bridge plugin makes them, if no pod has run yet. */
async function ensureGatewayAddress(): Promise<void> {
  const shown = await run(undefined, 'ip', ['-4', 'addr', 'show', 'dev', BRIDGE]);
  if (shown.stdout.includes(`inet ${GATEWAY}/`)) return;
  for (const args of [
    ['link', 'add', BRIDGE, 'type', 'bridge'],
    ['addr', 'add', `${GATEWAY}/16`, 'dev', BRIDGE],
    ['link', 'set', BRIDGE, 'up'],
  ]) {
    const r = await run(undefined, 'ip', args);
    // A pod of another test may make it at the same moment.
    if (r.code !== 0 && !/File exists/.test(r.stderr)) throw new Error(`ip ${args.join(' ')}: ${r.stderr}`);
  }
}

if (containerd && kubectl) {
  const node = nodeName('config');
  let up: NodeletUp | undefined;

  test.before(async () => {
    await ensureGatewayAddress();
    up = await NodeletUp.start([
      '--runtime',
      'containerd',
      '--hostname-override',
      node,
      '--address',
      GATEWAY,
    ]);
    await pollUntil(
      'the node to be Ready',
      async () => {
        const r = await up!.kubectl(['get', 'node', node, '--no-headers']);
        return /\sReady\s/.test(r.stdout) ? true : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 250, describe: () => up!.stderr().slice(-3000) },
    );
  });

  test.after.always(async () => {
    await up?.kubectl(['delete', 'pods', '--all', '--grace-period=1', '--wait=false']);
    await up?.stop();
    await sweepNode(containerd.endpoint, node);
    up?.dispose();
  });

  const apply = async (yaml: string) => {
    const r = await up!.kubectl(['apply', '-f', '-'], yaml);
    if (r.code !== 0) throw new Error(`kubectl apply: ${r.stderr}`);
  };

  /** `kubectl logs` of the pod once `done(logs)` holds (bounded). */
  const logsUntil = (pod: string, what: string, done: (logs: string) => boolean, timeoutMs = 90_000) => {
    let last = '';
    return pollUntil(
      `${pod}'s log to show ${what}`,
      async () => {
        const r = await up!.kubectl(['logs', pod]);
        last = r.stdout + r.stderr;
        return r.code === 0 && done(r.stdout) ? r.stdout : undefined;
      },
      { timeoutMs, intervalMs: 500, describe: () => `${last.slice(-2000)}\n${up!.stderr().slice(-2000)}` },
    );
  };

  test.serial("the docs' ConfigMap pod: values as env vars and as files", async (t) => {
    await apply(`apiVersion: v1
kind: ConfigMap
metadata: {name: special-config, namespace: default}
data: {SPECIAL_LEVEL: very, SPECIAL_TYPE: charm}
---
apiVersion: v1
kind: Pod
metadata: {name: dapi-test-pod}
spec:
  containers:
  - name: test-container
    image: ${BUSYBOX}
    command: ["/bin/sh", "-c", "echo $(SPECIAL_LEVEL_KEY) $(SPECIAL_TYPE_KEY)"]
    env:
    - name: SPECIAL_LEVEL_KEY
      valueFrom: {configMapKeyRef: {name: special-config, key: SPECIAL_LEVEL}}
    - name: SPECIAL_TYPE_KEY
      valueFrom: {configMapKeyRef: {name: special-config, key: SPECIAL_TYPE}}
  restartPolicy: Never
---
apiVersion: v1
kind: Pod
metadata: {name: dapi-test-pod-volume}
spec:
  containers:
  - name: test-container
    image: ${BUSYBOX}
    command: ["/bin/sh", "-c", "ls /etc/config/"]
    volumeMounts: [{name: config-volume, mountPath: /etc/config}]
  volumes:
  - name: config-volume
    configMap: {name: special-config}
  restartPolicy: Never
`);
    t.is(await logsUntil('dapi-test-pod', 'its values', (l) => l !== ''), 'very charm\n');
    t.is(
      await logsUntil('dapi-test-pod-volume', 'its files', (l) => l !== ''),
      'SPECIAL_LEVEL\nSPECIAL_TYPE\n',
    );
  });

  test.serial(
    'a ConfigMap change reaches the running container within 90 s, swapped whole through ..data',
    async (t) => {
      await apply(`apiVersion: v1
kind: ConfigMap
metadata: {name: swap}
data: {A: v1, B: v1}
---
apiVersion: v1
kind: Pod
metadata: {name: reader}
spec:
  containers:
  - name: reader
    image: ${BUSYBOX}
    volumeMounts: [{name: swap, mountPath: /etc/swap}]
    command:
    - sh
    - -c
    - |
      echo "data -> $(readlink /etc/swap/..data)"
      i=0
      while [ $i -lt 4000 ]; do
        d=$(readlink /etc/swap/..data) && a=$(cat /etc/swap/$d/A 2>/dev/null) && b=$(cat /etc/swap/$d/B 2>/dev/null) && echo "$a $b"
        i=$((i+1))
        sleep 0.05
      done
  volumes:
  - name: swap
    configMap: {name: swap}
  restartPolicy: Never
`);
      const first = await logsUntil('reader', 'the first values', (l) => l.includes('v1 v1'), 60_000);
      t.regex(first, /^data -> \.\.\d{4}_\d{2}_\d{2}_\d{2}_\d{2}_\d{2}\.\d+\n/, 'a timestamped payload');
      await apply(`apiVersion: v1
kind: ConfigMap
metadata: {name: swap}
data: {A: v2, B: v2}
`);
      const logs = await logsUntil('reader', 'the new values', (l) => l.includes('v2 v2'), 90_000);
      const mixed = logs.split('\n').filter((l) => l === 'v1 v2' || l === 'v2 v1');
      t.deepEqual(mixed, [], 'a reader never saw old and new files together');
    },
  );

  test.serial('a Secret volume is 0644 by default and honours defaultMode 0400', async (t) => {
    await apply(`apiVersion: v1
kind: Secret
metadata: {name: mysecret}
type: Opaque
data: {username: YWRtaW4=}
---
apiVersion: v1
kind: Pod
metadata: {name: secret-modes}
spec:
  containers:
  - name: c
    image: ${BUSYBOX}
    command: ["sh", "-c", "stat -L -c %a /etc/s1/username /etc/s2/username; cat /etc/s1/username"]
    volumeMounts:
    - {name: s1, mountPath: /etc/s1}
    - {name: s2, mountPath: /etc/s2}
  volumes:
  - name: s1
    secret: {secretName: mysecret}
  - name: s2
    secret: {secretName: mysecret, defaultMode: 0400}
  restartPolicy: Never
`);
    t.is(await logsUntil('secret-modes', 'the modes', (l) => l.includes('admin')), '644\n400\nadmin');
  });

  test.serial('a downwardAPI volume shows the labels and follows a change', async (t) => {
    await apply(`apiVersion: v1
kind: Pod
metadata:
  name: labels
  labels: {zone: us-est-coast, rack: rack-22}
spec:
  containers:
  - name: c
    image: ${BUSYBOX}
    command: ["sh", "-c", "i=0; while [ $i -lt 300 ]; do cat /etc/podinfo/labels; echo; echo ---; i=$((i+1)); sleep 1; done"]
    volumeMounts: [{name: podinfo, mountPath: /etc/podinfo}]
  volumes:
  - name: podinfo
    downwardAPI:
      items:
      - path: labels
        fieldRef: {fieldPath: metadata.labels}
  restartPolicy: Never
`);
    const before = await logsUntil('labels', 'the labels', (l) => l.includes('---'), 60_000);
    t.true(before.startsWith('rack="rack-22"\nzone="us-est-coast"\n---'), before.slice(0, 200));
    const labelled = await up!.kubectl(['label', 'pod', 'labels', 'zone=us-west', '--overwrite']);
    t.is(labelled.code, 0, labelled.stderr);
    await logsUntil('labels', 'the new label', (l) => l.includes('zone="us-west"'), 90_000);
  });

  test.serial(
    'every pod has a kube-api-access volume; its token authenticates to the API server from inside the pod',
    async (t) => {
      const port = new URL(
        (await up!.kubectl(['config', 'view', '-o', 'jsonpath={.clusters[0].cluster.server}'])).stdout,
      ).port;
      await apply(`apiVersion: v1
kind: Pod
metadata: {name: whoami}
spec:
  containers:
  - name: c
    image: ${BUSYBOX_OPENSSL}
    command:
    - sh
    - -c
    - |
      dir=/var/run/secrets/kubernetes.io/serviceaccount
      echo "namespace: $(cat $dir/namespace)"
      wget -q -O - --no-check-certificate \\
        --header "Authorization: Bearer $(cat $dir/token)" --header "Content-Type: application/json" \\
        --post-data '{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}' \\
        https://${GATEWAY}:${port}/apis/authentication.k8s.io/v1/selfsubjectreviews
      echo
      echo "done"
  restartPolicy: Never
`);
      const logs = await logsUntil('whoami', 'the review', (l) => l.includes('done'));
      t.true(logs.startsWith('namespace: default\n'), logs);
      const body = logs.slice(logs.indexOf('\n') + 1, logs.lastIndexOf('\ndone'));
      let review: { status: { userInfo: { username: string; groups: string[] } } };
      try {
        review = JSON.parse(body);
      } catch {
        return t.fail(`the pod's request got no review: ${logs}\n${up!.stderr().slice(-2000)}`);
      }
      t.is(review.status.userInfo.username, 'system:serviceaccount:default:default');
      t.true(review.status.userInfo.groups.includes('system:serviceaccounts:default'));
      const pod = JSON.parse((await up!.kubectl(['get', 'pod', 'whoami', '-o', 'json'])).stdout);
      const access = pod.spec.volumes.find((v: { name: string }) => v.name.startsWith('kube-api-access-'));
      t.truthy(access?.projected, 'the ServiceAccount admission added the projected volume');
      t.true(
        pod.spec.containers[0].volumeMounts.some(
          (m: { mountPath: string; readOnly?: boolean }) =>
            m.mountPath === '/var/run/secrets/kubernetes.io/serviceaccount' && m.readOnly,
        ),
      );
    },
  );
}
