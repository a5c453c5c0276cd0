import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import type { Pod } from '@nodelet/api';
import { parseYamlText } from '@nodelet/kernel';
import { freePort, KubeletProcess, nodelet, podManifest, pollUntil, type TableRow } from './test-helpers.js';

/**
 * End to end through the real command, as a user runs it: `nodelet kubelet` as a child process on the
 * fake runtime in real time, `nodelet get pods` against its read-only port.
 */
const examples = fileURLToPath(new URL('../../../examples/', import.meta.url));
const example = (name: string) => readFileSync(join(examples, 'manifests', name), 'utf8');

const find = (rows: TableRow[], name: string) => rows.filter((r) => r.NAME === name);

async function podsJson(k: KubeletProcess): Promise<Pod[]> {
  const r = await k.getPods('-o', 'json');
  if (r.code !== 0) throw new Error(`get pods -o json failed: ${r.stderr}`);
  return (JSON.parse(r.stdout) as { items: Pod[] }).items;
}

test.serial(
  'a dropped manifest runs within 2 s; an edit replaces its containers; removing the file removes the pod',
  async (t) => {
    const k = await KubeletProcess.start(t);

    const empty = await k.getPods();
    t.is(empty.code, 0);
    t.is(empty.stdout, '');
    t.is(empty.stderr, 'No resources found in default namespace.\n');

    // The docs' nginx pod, unchanged.
    const start = Date.now();
    k.writeManifest('nginx.yaml', example('nginx.yaml'));
    const row = await pollUntil(
      'nginx-node1 to be Running',
      async () => find(await k.rows(), 'nginx-node1').find((r) => r.STATUS === 'Running'),
      { timeoutMs: 30_000, intervalMs: 50 },
    );
    const elapsed = Date.now() - start;
    t.log(`nginx-node1 Running ${elapsed} ms after its manifest was written`);
    t.true(elapsed < 2000, `Running after ${elapsed} ms (want < 2000 ms)`);
    t.like(row, { READY: '1/1', RESTARTS: '0' });
    t.regex(row.AGE!, /^\d+s$/);

    const [first] = (await podsJson(k)).filter((p) => p.metadata?.name === 'nginx-node1');
    t.is(first?.spec?.containers[0]?.image, 'nginx:1.14.2');
    const firstUid = first!.metadata!.uid!;

    // Edit the image: a static pod's identity hashes its content, so this is a new pod with a new UID.
    k.writeManifest('nginx.yaml', example('nginx.yaml').replace('nginx:1.14.2', 'nginx:1.16.1'));
    const replaced = await pollUntil(
      'the edited pod to replace the old one',
      async () => {
        const pods = (await podsJson(k)).filter((p) => p.metadata?.name === 'nginx-node1');
        const only = pods.length === 1 ? pods[0]! : undefined;
        return only && only.metadata!.uid !== firstUid && only.status?.phase === 'Running' ? only : undefined;
      },
      { timeoutMs: 15_000, intervalMs: 100 },
    );
    t.is(replaced.spec!.containers[0]!.image, 'nginx:1.16.1');
    t.is(replaced.status!.containerStatuses![0]!.image, 'nginx:1.16.1');
    t.like(find(await k.rows(), 'nginx-node1'), [{ STATUS: 'Running', READY: '1/1' }]);

    // Remove the file: the pod goes.
    k.removeManifest('nginx.yaml');
    await pollUntil(
      'nginx-node1 to disappear',
      async () => ((await k.rows()).length === 0 ? true : undefined),
      {
        timeoutMs: 15_000,
        intervalMs: 100,
      },
    );
    t.is((await k.getPods()).stderr, 'No resources found in default namespace.\n');

    t.deepEqual(await k.stop(), { code: 0, signal: null }, 'exits 0 on SIGTERM');
  },
);

test.serial('the docs examples run on the fake runtime; -o wide, -A, -n, -o name/json/yaml', async (t) => {
  const k = await KubeletProcess.start(t, 'Worker-7');
  k.writeManifest('nginx.yaml', example('nginx.yaml'));
  k.writeManifest('emptydir.yaml', example('emptydir.yaml'));
  const rows = await pollUntil(
    'both example pods to be Running',
    async () => {
      const rows = await k.rows('-o', 'wide');
      return rows.length === 2 && rows.every((r) => r.STATUS === 'Running') ? rows : undefined;
    },
    { timeoutMs: 30_000 },
  );
  // Static pods are named <name>-<node name in lower case>.
  t.deepEqual(
    rows.map((r) => r.NAME),
    ['nginx-worker-7', 'test-pd-worker-7'],
  );
  for (const r of rows) {
    t.regex(r.IP!, /^10\.244\.\d+\.\d+$/);
    t.is(r.NODE, 'worker-7');
    t.is(r['NOMINATED NODE'], '<none>');
    t.is(r['READINESS GATES'], '<none>');
  }

  const all = await k.rows('-A');
  t.deepEqual(
    all.map((r) => `${r.NAMESPACE}/${r.NAME}`),
    ['default/nginx-worker-7', 'default/test-pd-worker-7'],
  );
  const other = await k.getPods('-n', 'kube-system');
  t.is(other.code, 0);
  t.is(other.stderr, 'No resources found in kube-system namespace.\n');

  const named = await k.getPods('test-pd-worker-7', '-o', 'name');
  t.is(named.stdout, 'pod/test-pd-worker-7\n');
  const missing = await k.getPods('nope');
  t.is(missing.code, 1);
  t.is(missing.stderr, 'Error from server (NotFound): pods "nope" not found\n');

  const yaml = await k.getPods('test-pd-worker-7', '-o', 'yaml');
  const pod = parseYamlText(yaml.stdout, 'get pods -o yaml') as Pod;
  t.is(pod.kind, 'Pod');
  t.is(pod.spec?.volumes?.[0]?.emptyDir?.sizeLimit, '500Mi');
  t.is(pod.status?.phase, 'Running');
  const list = JSON.parse((await k.getPods('-o', 'json')).stdout) as { kind: string; items: Pod[] };
  t.is(list.kind, 'List');
  t.is(list.items.length, 2);

  t.deepEqual(await k.stop(), { code: 0, signal: null });
});

test.serial(
  'a malformed manifest beside a running pod: one log line naming the file; the pod keeps running; fixing it runs its pod',
  async (t) => {
    const k = await KubeletProcess.start(t);
    k.writeManifest('web.yaml', podManifest('web', 'nginx:1.14.2'));
    await pollUntil(
      'web-node1 to be Running',
      async () => find(await k.rows(), 'web-node1').find((r) => r.STATUS === 'Running'),
      {
        timeoutMs: 30_000,
      },
    );

    const bad = join(k.manifests, 'fixme.yaml');
    writeFileSync(
      bad,
      'apiVersion: v1\nkind: Pod\nmetadata:\n  name: fixme\nspec:\n  containers: [\n    - name: x\n',
    );
    const rejected = () =>
      k
        .stderr()
        .split('\n')
        .filter((l) => l.includes(bad) && /rejected/.test(l));
    const [line] = await pollUntil(
      'the rejection to be logged',
      async () => (rejected().length > 0 ? rejected() : undefined),
      {
        timeoutMs: 30_000,
        describe: () => k.stderr(),
      },
    );
    t.regex(line!, /not valid YAML \(line \d+, column \d+\)/);

    t.like(find(await k.rows(), 'web-node1'), [{ STATUS: 'Running', READY: '1/1' }]);

    writeFileSync(bad, podManifest('fixme', 'busybox'));
    await pollUntil(
      'fixme-node1 to be Running',
      async () => find(await k.rows(), 'fixme-node1').find((r) => r.STATUS === 'Running'),
      {
        timeoutMs: 30_000,
      },
    );
    t.like(find(await k.rows(), 'web-node1'), [{ STATUS: 'Running' }]);
    t.is(rejected().length, 1, 'the bad content is reported once');

    t.deepEqual(await k.stop(), { code: 0, signal: null });
  },
);

test('startup errors are one line on stderr and exit 1', async (t) => {
  const unknown = await nodelet(['kubelet', '--foo']);
  t.deepEqual(unknown, {
    code: 1,
    stdout: '',
    stderr: 'nodelet: unknown flag --foo; see nodelet kubelet --help\n',
  });

  const runtime = await nodelet([
    'kubelet',
    '--runtime',
    'containerd',
    '--container-runtime-endpoint',
    'unix:///nonexistent/containerd.sock',
    '--read-only-port',
    '0',
    '--port',
    '0',
  ]);
  t.is(runtime.code, 1);
  t.is(
    runtime.stderr,
    'nodelet: cannot connect to containerd at unix:///nonexistent/containerd.sock: no such socket (/nonexistent/containerd.sock); is containerd running? set the socket with --container-runtime-endpoint (KubeletConfiguration containerRuntimeEndpoint, or plugins.runtime-containerd.runtimeEndpoint)\n',
  );

  const noConfig = await nodelet(['kubelet', '--config', '/nonexistent/nodelet.yaml']);
  t.is(noConfig.code, 1);
  t.regex(noConfig.stderr, /^nodelet: \/nonexistent\/nodelet\.yaml: cannot read the file: [^\n]*\n$/);

  // A port that is taken: the kubelet says so, stops what it started and exits 1.
  const taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  t.teardown(() => taken.close());
  const port = (taken.address() as { port: number }).port;
  const k = await nodelet([
    'kubelet',
    '--read-only-port',
    String(port),
    '--port',
    '0',
    '--root-dir',
    '/tmp/nodelet-e2e-unused',
    '--hostname-override',
    'x',
  ]);
  t.is(k.code, 1);
  const errorLines = k.stderr.split('\n').filter((l) => l.startsWith('nodelet:'));
  t.deepEqual(errorLines, [
    `nodelet: read-only port ${port} on 127.0.0.1 is already in use; choose another with the flag --read-only-port or the config field readOnlyPort (0 disables it)`,
  ]);
  t.notRegex(k.stderr, /\n\s+at /, 'no stack trace');
});

test('get pods: an unreachable kubelet is one line that says what to check', async (t) => {
  const port = await freePort();
  const r = await nodelet(['get', 'pods', '--server', `http://127.0.0.1:${port}`]);
  t.deepEqual(r, {
    code: 1,
    stdout: '',
    stderr: `nodelet: cannot reach the kubelet at http://127.0.0.1:${port} (is "nodelet kubelet" running? its read-only port is set by --read-only-port)\n`,
  });
});

test('help and version', async (t) => {
  const help = await nodelet(['--help']);
  t.is(help.code, 0);
  t.regex(help.stdout, /nodelet <command>/);
  const kubeletHelp = await nodelet(['kubelet', '--help']);
  t.is(kubeletHelp.code, 0);
  for (const flag of [
    '--pod-manifest-path',
    '--manifest-url',
    '--manifest-url-header',
    '--config',
    '--runtime',
    '--hostname-override',
    '--node-ip',
    '--root-dir',
    '--read-only-port',
    '--address',
    '--port',
    '--client-ca-file',
    '--authorization-mode',
    '--anonymous-auth',
    '--authentication-token-webhook',
    '--tls-cert-file',
    '--v',
  ]) {
    t.true(kubeletHelp.stdout.includes(flag), flag);
  }
  const getHelp = await nodelet(['get', '--help']);
  t.regex(getHelp.stdout, /nodelet get pods/);
  const version = await nodelet(['version']);
  t.regex(version.stdout, /^nodelet v\d+\.\d+\.\d+ /);
});
