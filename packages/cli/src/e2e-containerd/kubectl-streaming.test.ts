import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import test from 'ava';
import { requireContainerd } from '@nodelet/runtime-cri/testing';
import { pollUntil } from '../test-helpers.js';
import { BUSYBOX, httpGet, manifest, nodeName, sweepNode } from './helpers.js';
import { KubectlStream } from './kubectl-streaming.js';
import { kubectlPath, NodeletUp, requireKubectl, run } from './nodelet-up.js';
import { runInTerminal } from './terminal.js';

/**
 * The kubelet's API as kubectl users reach it, through the API server of `nodelet up` to the kubelet's
 * 10250 and from there to containerd's streaming server: `kubectl logs -f` and `--previous`, `exec` with
 * stdin, stdout, stderr and the exit code, `exec -it` with the terminal's size and its resizes, `cp` both ways, `attach`,
 * `port-forward` and `top`. Traffic stays on the machine: kubectl talks to 127.0.0.1, port-forward listens
 * on 127.0.0.1 and reaches the pod through the kubelet.
 */
const containerd = await requireContainerd(test);
const kubectl = requireKubectl(test);

const pods = [
  manifest(
    'talker',
    `  containers:
  - name: main
    image: ${BUSYBOX}
    command: ["sh", "-c", "echo started; i=0; while true; do echo tick $i; i=$((i+1)); sleep 1; done"]
`,
  ),
  // Each run counts itself in an emptyDir that outlives the container, then fails: a restart's
  // `logs --previous` shows the run before.
  manifest(
    'crasher',
    `  containers:
  - name: main
    image: ${BUSYBOX}
    command: ["sh", "-c", "n=$(cat /d/n 2>/dev/null || echo 0); n=$((n+1)); echo $n > /d/n; echo run $n; sleep 3; exit 1"]
    volumeMounts: [{name: d, mountPath: /d}]
  volumes: [{name: d, emptyDir: {}}]
`,
  ),
  manifest(
    'web',
    `  containers:
  - name: web
    image: ${BUSYBOX}
    command: ["sh", "-c", "mkdir -p /www && echo \\"hello from $(hostname)\\" > /www/index.html && exec httpd -f -p 8080 -h /www"]
    ports: [{containerPort: 8080}]
`,
  ),
].join('---\n');

if (containerd && kubectl) {
  const node = nodeName('stream');
  let up: NodeletUp;
  const local = mkdtempSync(join(tmpdir(), 'nodelet-kubectl-cp-'));

  test.before(async () => {
    // Two scrapes give kubectl top its first CPU figure: 2 s apart instead of metrics-server's 15 s.
    up = await NodeletUp.start([
      '--runtime',
      'containerd',
      '--hostname-override',
      node,
      '--metric-resolution',
      '2s',
    ]);
    await up.kubectlOk(['apply', '-f', '-'], pods);
    await up.kubectlOk(['wait', '--for=condition=Ready', 'pod/talker', 'pod/web', '--timeout=90s']);
  });

  test.after.always(async () => {
    await up?.kubectl(['delete', 'pods', '--all', '--grace-period=1', '--wait=false']);
    await up?.stop();
    await sweepNode(containerd.endpoint, node);
    up?.dispose();
    rmSync(local, { recursive: true, force: true });
  });

  test.serial('kubectl logs -f streams new lines as the container writes them', async (t) => {
    const follow = new KubectlStream(up, ['logs', '-f', 'talker']);
    try {
      const first = Number((await follow.until(/tick (\d+)/, 'a first tick'))[1]);
      await follow.until(new RegExp(`tick ${first + 2}\\b`), 'two more ticks, streamed');
      t.regex(follow.stdout, /^started$/m);
    } finally {
      await follow.stop();
    }
  });

  test.serial('kubectl logs --previous shows the run before the restart', async (t) => {
    const current = await pollUntil(
      'crasher to have restarted and logged its run',
      async () => {
        const r = await up.kubectl(['logs', 'crasher']);
        const run = Number(/run (\d+)/.exec(r.stdout)?.[1]);
        return run >= 2 ? run : undefined;
      },
      { timeoutMs: 90_000, intervalMs: 500 },
    );
    const previous = await up.kubectl(['logs', '--previous', 'crasher']);
    t.is(previous.code, 0, previous.stderr);
    const before = Number(/run (\d+)/.exec(previous.stdout)?.[1]);
    // The container may restart once more between the two calls.
    t.true(before === current - 1 || before === current, previous.stdout);
  });

  test.serial(
    'kubectl exec -i: stdin reaches the command, stdout and stderr come back apart, the exit code is kept',
    async (t) => {
      const script = 'read x; echo out:$x; echo err:$x >&2; exit 3';
      const r = await up.kubectl(['exec', '-i', 'web', '--', 'sh', '-c', script], 'hello\n');
      t.is(r.stdout, 'out:hello\n');
      t.regex(r.stderr, /err:hello/);
      t.is(r.code, 3, r.stderr);
    },
  );

  test.serial('kubectl exec -it: a terminal of the size kubectl was run in', async (t) => {
    // script(1) gives kubectl a terminal; kubectl sends its size on the resize channel, which may reach
    // the runtime just after the command started (as upstream) — so the command polls for it, bounded.
    const poll =
      'for i in $(seq 50); do s=$(stty size 2>/dev/null); case "$s" in ""|"0 0") sleep 0.1;; *) break;; esac; done; echo "$s"';
    const command = `stty cols 123 rows 45; ${kubectlPath} --kubeconfig ${up.kubeconfig} exec -it web -- sh -c '${poll}'`;
    const r = await run(undefined, 'script', ['-qec', command, '/dev/null']);
    t.is(r.code, 0, r.stdout + r.stderr);
    t.regex(r.stdout, /45 123/);
  });

  test.serial(
    'kubectl exec -it: resizing the terminal during the session resizes the container’s',
    async (t) => {
      // The command reports each size it sees, and ends once it sees the new one (bounded: 30 s).
      const watch =
        'last=; for i in $(seq 300); do s=$(stty size 2>/dev/null); if [ "$s" != "$last" ]; then echo "size $s"; last=$s; fi; [ "$s" = "30 100" ] && exit 0; sleep 0.1; done; exit 1';
      const r = await runInTerminal({
        argv: [kubectlPath, '--kubeconfig', up.kubeconfig, 'exec', '-it', 'web', '--', 'sh', '-c', watch],
        rows: 45,
        cols: 123,
        resizeOn: 'size 45 123',
        newRows: 30,
        newCols: 100,
        timeoutSeconds: 60,
      });
      t.is(r.code, 0, r.stdout + r.stderr);
      t.regex(r.stdout, /size 45 123[\s\S]*size 30 100/);
    },
  );

  test.serial('kubectl cp into the pod and back out keeps the bytes', async (t) => {
    const content = randomBytes(200_000).toString('base64');
    writeFileSync(join(local, 'in.txt'), content);
    await up.kubectlOk(['cp', join(local, 'in.txt'), 'default/web:/tmp/in.txt']);
    t.is(
      (await up.kubectlOk(['exec', 'web', '--', 'sh', '-c', 'wc -c < /tmp/in.txt'])).trim(),
      String(content.length),
    );
    await up.kubectlOk(['cp', 'default/web:/tmp/in.txt', join(local, 'out.txt')]);
    t.is(readFileSync(join(local, 'out.txt'), 'utf8'), content);
  });

  test.serial('kubectl attach shows what the running container prints', async (t) => {
    const attach = new KubectlStream(up, ['attach', 'talker']);
    try {
      const m = await attach.until(/tick (\d+)/, 'a tick through attach');
      t.true(Number(m[1]) >= 0);
    } finally {
      await attach.stop();
    }
  });

  test.serial(
    'kubectl port-forward: a GET on the forwarded 127.0.0.1 port returns the pod page',
    async (t) => {
      const forward = new KubectlStream(up, ['port-forward', '--address', '127.0.0.1', 'pod/web', ':8080']);
      try {
        const port = Number(
          (await forward.until(/Forwarding from 127\.0\.0\.1:(\d+) -> 8080/, 'the forwarding line'))[1],
        );
        for (let i = 0; i < 3; i++) {
          const page = await httpGet('127.0.0.1', port, '/');
          t.is(page.status, 200);
          t.is(page.body, 'hello from web\n');
        }
      } finally {
        await forward.stop();
      }
    },
  );

  test.serial('kubectl top node and top pod', async (t) => {
    const nodes = await pollUntil(
      'kubectl top node to show the node',
      async () => {
        const r = await up.kubectl(['top', 'node', node, '--no-headers']);
        return r.code === 0 ? r.stdout : undefined;
      },
      { timeoutMs: 90_000, intervalMs: 1000, describe: () => up.stderr().slice(-2000) },
    );
    t.regex(nodes, new RegExp(`^${node}\\s+\\d+m\\s+\\d+%\\s+\\d+Mi\\s+\\d+%`, 'm'));
    const podsTop = await pollUntil(
      'kubectl top pod to show web',
      async () => {
        const r = await up.kubectl(['top', 'pod', 'web', '--no-headers']);
        return r.code === 0 ? r.stdout : undefined;
      },
      { timeoutMs: 90_000, intervalMs: 1000 },
    );
    t.regex(podsTop, /^web\s+\d+m\s+\d+Mi/m);
  });
}
