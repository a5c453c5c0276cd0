import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { requireContainerd } from '@nodelet/runtime-cri/testing';
import { freePort, pollUntil } from '../test-helpers.js';
import {
  BUSYBOX,
  containerStatus,
  httpGet,
  isRunning,
  KubeletChild,
  manifest,
  nodeName,
  sweepNode,
  Workspace,
} from './helpers.js';

/**
 * securityContext and lifecycle hooks on real containerd, through the CLI as a user runs it: what the
 * container's processes see (`id -u`, CapEff, a read-only root, the fsGroup of an emptyDir, a bridge a
 * privileged container creates), runAsNonRoot refused for a root image, a Localhost seccomp profile that
 * is not there, a postStart hook that runs before the container shows Running, a failing one that
 * restarts it, a preStop hook whose time delays SIGTERM within the grace period, a preStop httpGet to
 * the pod, and a hostPort through the CNI portmap plugin.
 */
const containerd = await requireContainerd(test);

if (containerd) {
  const node = nodeName('secctx');
  const ws = new Workspace();
  const shared = join(ws.dir, 'shared'); // a hostPath the preStop test's container writes to
  mkdirSync(shared);
  let k: KubeletChild | undefined;

  test.before(async () => {
    k = await KubeletChild.start(ws, node);
  });
  test.after.always(async () => {
    await k?.stop();
    await sweepNode(containerd.endpoint, node);
    await ws.dispose();
  });

  /** Polls the container log until `done(log)`; the log then. */
  const logUntil = (pod: string, done: (log: string) => boolean) =>
    pollUntil(
      `${pod}: its log`,
      async () => {
        const r = await k!.logs(pod);
        return r.code === 0 && done(r.stdout) ? r.stdout : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 250, describe: () => k!.stderr().slice(-2000) },
    );

  test('runAsUser 1000, readOnlyRootFilesystem, capabilities drop ALL, no privilege escalation, RuntimeDefault seccomp: what the process sees', async (t) => {
    const pod = `locked-${node}`;
    ws.write(
      'locked.yaml',
      manifest(
        'locked',
        `  containers:
  - name: main
    image: ${BUSYBOX}
    command: ["sh", "-c", "id -u; grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status; touch /probe 2>/dev/null && echo wrote-root || echo root-read-only; sleep 3600"]
    securityContext:
      runAsUser: 1000
      readOnlyRootFilesystem: true
      allowPrivilegeEscalation: false
      capabilities: {drop: [ALL]}
      seccompProfile: {type: RuntimeDefault}
`,
      ),
    );
    const log = await logUntil(pod, (l) => /read-only|wrote-root/.test(l));
    // Seccomp 2: a filter (RuntimeDefault); NoNewPrivs 1: allowPrivilegeEscalation false.
    t.is(log, '1000\nCapEff:\t0000000000000000\nNoNewPrivs:\t1\nSeccomp:\t2\nroot-read-only\n');
  });

  test('fsGroup 2000: the emptyDir is group 2000 and the non-root user writes to it', async (t) => {
    const pod = `grouped-${node}`;
    ws.write(
      'grouped.yaml',
      manifest(
        'grouped',
        `  securityContext: {runAsUser: 1000, fsGroup: 2000}
  containers:
  - name: main
    image: ${BUSYBOX}
    command: ["sh", "-c", "stat -c 'group %g' /data; id -G; touch /data/f && echo wrote; sleep 3600"]
    volumeMounts: [{name: data, mountPath: /data}]
  volumes: [{name: data, emptyDir: {}}]
`,
      ),
    );
    const log = await logUntil(pod, (l) => l.includes('wrote') || l.split('\n').length > 3);
    t.is(log, 'group 2000\n0 2000\nwrote\n');
  });

  test('runAsNonRoot with an image that runs as root: CreateContainerConfigError with upstream’s message', async (t) => {
    const pod = `rooted-${node}`;
    ws.write(
      'rooted.yaml',
      manifest(
        'rooted',
        `  securityContext: {runAsNonRoot: true}
  containers:
  - name: main
    image: ${BUSYBOX}
    command: ["sleep", "3600"]
`,
      ),
    );
    const p = await k!.waitPod(
      pod,
      'CreateContainerConfigError',
      (p) => containerStatus(p, 'main')?.state?.waiting?.reason === 'CreateContainerConfigError',
    );
    t.is(
      containerStatus(p, 'main')?.state?.waiting?.message,
      `container has runAsNonRoot and image will run as root (pod: "${pod}_default(${p.metadata?.uid})", container: main)`,
    );
  });

  test('privileged: the sandbox is privileged too, and the container creates a bridge in its pod', async (t) => {
    const pod = `priv-${node}`;
    ws.write(
      'priv.yaml',
      manifest(
        'priv',
        `  containers:
  - name: main
    image: ${BUSYBOX}
    command: ["sh", "-c", "ip link add x type bridge && ip -o link show x | grep -o 'x: <[A-Z,]*>' ; sleep 3600"]
    securityContext: {privileged: true}
`,
      ),
    );
    const log = await logUntil(pod, (l) => l.length > 0);
    t.is(log, 'x: <BROADCAST,MULTICAST>\n');
  });

  test('postStart: the container shows Running only after its hook wrote its file', async (t) => {
    const pod = `hooked-${node}`;
    ws.write(
      'hooked.yaml',
      manifest(
        'hooked',
        `  containers:
  - name: main
    image: ${BUSYBOX}
    command: ["sh", "-c", "until [ -f /tmp/hook ]; do sleep 0.2; done; echo hook-wrote-at-$(cat /tmp/hook); sleep 3600"]
    lifecycle:
      postStart:
        exec: {command: ["sh", "-c", "sleep 3; cut -d' ' -f1 /proc/uptime > /tmp/hook"]}
`,
      ),
    );
    // The kernel's uptime is the same inside and outside the container.
    const uptime = () => Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]);
    await k!.waitPod(pod, 'Running', (p) => isRunning(p, 'main'));
    const runningSeenAt = uptime();
    const log = await logUntil(pod, (l) => l.includes('hook-wrote-at-'));
    const hookWroteAt = Number(/hook-wrote-at-([\d.]+)/.exec(log)![1]);
    t.true(
      hookWroteAt <= runningSeenAt,
      `the hook wrote at ${hookWroteAt}, Running was seen at ${runningSeenAt}`,
    );
  });

  test('a failing postStart hook kills the container; it is restarted', async (t) => {
    const pod = `badhook-${node}`;
    ws.write(
      'badhook.yaml',
      manifest(
        'badhook',
        `  containers:
  - name: main
    image: ${BUSYBOX}
    command: ["sleep", "3600"]
    lifecycle:
      postStart:
        exec: {command: ["sh", "-c", "exit 7"]}
`,
      ),
    );
    const p = await k!.waitPod(pod, 'restarted', (p) => (containerStatus(p, 'main')?.restartCount ?? 0) >= 1);
    const status = containerStatus(p, 'main')!;
    t.truthy(status.lastState?.terminated, 'the killed instance is the last state');
    t.regex(
      k!.stderr(),
      /Failed to execute PostStartHook .*Exec lifecycle hook \(\[sh -c exit 7\]\) for Container \\"main\\" in Pod/,
    );
  });

  test('preStop sleeps 5 s of a 10 s grace: SIGTERM 5 s after the deletion, the pod gone within 10 s', async (t) => {
    const pod = `drain-${node}`;
    ws.write(
      'drain.yaml',
      manifest(
        'drain',
        `  containers:
  - name: main
    image: ${BUSYBOX}
    command: ["sh", "-c", "trap 'cut -d\\" \\" -f1 /proc/uptime > /shared/term; exit 0' TERM; echo up; while true; do sleep 0.2; done"]
    volumeMounts: [{name: shared, mountPath: /shared}]
    lifecycle:
      preStop:
        sleep: {seconds: 5}
  volumes: [{name: shared, hostPath: {path: ${shared}}}]
`,
      ).replace('terminationGracePeriodSeconds: 2', 'terminationGracePeriodSeconds: 10'),
    );
    await logUntil(pod, (l) => l === 'up\n');
    const deletedAt = Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]);
    ws.remove('drain.yaml');
    await pollUntil('the pod to be gone', async () => ((await k!.pod(pod)) ? undefined : true), {
      timeoutMs: 30_000,
      intervalMs: 200,
    });
    const goneAt = Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]);
    const termAt = Number(readFileSync(join(shared, 'term'), 'utf8'));
    t.log(
      `SIGTERM ${(termAt - deletedAt).toFixed(2)} s after the deletion; gone after ${(goneAt - deletedAt).toFixed(2)} s`,
    );
    t.true(termAt - deletedAt >= 4.9, 'SIGTERM only after the preStop sleep');
    t.true(goneAt - deletedAt < 10, 'gone within the grace period');
  });

  test('a Localhost seccomp profile that is not there: CreateContainerError naming the file; other pods run', async (t) => {
    const pod = `seccomp-${node}`;
    ws.write(
      'seccomp.yaml',
      manifest(
        'seccomp',
        `  containers:
  - name: main
    image: ${BUSYBOX}
    command: ["sleep", "3600"]
    securityContext:
      seccompProfile: {type: Localhost, localhostProfile: profiles/absent.json}
`,
      ),
    );
    const p = await k!.waitPod(
      pod,
      'CreateContainerError',
      (p) => containerStatus(p, 'main')?.state?.waiting?.reason === 'CreateContainerError',
    );
    const message = containerStatus(p, 'main')?.state?.waiting?.message ?? '';
    t.true(message.includes(join(ws.root, 'seccomp', 'profiles', 'absent.json')), message);
  });

  test('preStop httpGet: to the pod IP on a named port, as kube-lifecycle, before SIGTERM', async (t) => {
    const pod = `webhook-${node}`;
    // busybox httpd runs <www>/cgi-bin/hook for GET /cgi-bin/hook: it records the request in the hostPath.
    const www = join(shared, 'www');
    mkdirSync(join(www, 'cgi-bin'), { recursive: true });
    writeFileSync(
      join(www, 'cgi-bin', 'hook'),
      '#!/bin/sh\necho "$REQUEST_METHOD $REQUEST_URI $HTTP_USER_AGENT" > /shared/prestop-request\n' +
        'printf "Content-Type: text/plain\\r\\n\\r\\nok\\n"\n',
      { mode: 0o755 },
    );
    ws.write(
      'webhook.yaml',
      manifest(
        'webhook',
        `  containers:
  - name: main
    image: ${BUSYBOX}
    command: ["sh", "-c", "echo serving; exec httpd -f -p 8080 -h /shared/www"]
    ports: [{name: http, containerPort: 8080}]
    volumeMounts: [{name: shared, mountPath: /shared}]
    lifecycle:
      preStop:
        httpGet: {path: /cgi-bin/hook, port: http}
  volumes: [{name: shared, hostPath: {path: ${shared}}}]
`,
      ),
    );
    await logUntil(pod, (l) => l.includes('serving'));
    ws.remove('webhook.yaml');
    await pollUntil('the pod to be gone', async () => ((await k!.pod(pod)) ? undefined : true), {
      timeoutMs: 30_000,
      intervalMs: 200,
    });
    t.is(readFileSync(join(shared, 'prestop-request'), 'utf8'), 'GET /cgi-bin/hook kube-lifecycle/1.34\n');
  });

  test('hostPort: the CNI portmap plugin forwards the node’s 127.0.0.1:<hostPort> to the container', async (t) => {
    const pod = `hostport-${node}`;
    const hostPort = await freePort();
    ws.write(
      'hostport.yaml',
      manifest(
        'hostport',
        `  containers:
  - name: main
    image: ${BUSYBOX}
    command: ["sh", "-c", "mkdir -p /www && echo via-host-port > /www/index.html && echo serving && exec httpd -f -p 8080 -h /www"]
    ports: [{containerPort: 8080, hostPort: ${hostPort}}]
`,
      ),
    );
    await logUntil(pod, (l) => l.includes('serving'));
    const page = await pollUntil(
      `GET http://127.0.0.1:${hostPort}/`,
      () => httpGet('127.0.0.1', hostPort).catch(() => undefined),
      { timeoutMs: 20_000, intervalMs: 200 },
    );
    t.deepEqual(page, { status: 200, body: 'via-host-port\n' });
    ws.remove('hostport.yaml');
  });
}
