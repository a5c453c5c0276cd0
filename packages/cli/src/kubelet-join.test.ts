import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { createLogger, MemorySink, RealClock } from '@nodelet/kernel';
import { parseKubeletArgs } from './kubelet-command.js';
import { resolveKubeletSetup, type SetupEnv } from './kubelet-setup.js';
import { MAIN, pollUntil } from './test-helpers.js';

// The end-to-end test runs `nodelet kubelet --kubeconfig …` as a process against the embedded control
// plane, loaded at run time (the CLI does not depend on it for this); skipped when it is not built.
const specifier = '@nodelet/controlplane';
const controlPlane = await import(specifier).catch(() => undefined);
const cpTest = controlPlane?.ControlPlane ? test : test.skip;

function env(cwd: string): SetupEnv {
  return {
    cwd,
    hostname: 'host-a',
    isRoot: false,
    homeDir: '/home/ada',
    ipv4: ['192.0.2.7'],
    logger: createLogger({ sink: new MemorySink().sink }),
  };
}

test('--kubeconfig, --bootstrap-kubeconfig, --node-labels, --register-with-taints become the API server options', (t) => {
  const { flags } = parseKubeletArgs([
    '--kubeconfig',
    'kc.yaml',
    '--bootstrap-kubeconfig=/etc/bootstrap.kubeconfig',
    '--node-labels',
    'a=b,zone=z1',
    '--node-labels=c=d',
    '--register-with-taints',
    'dedicated=db:NoSchedule,gpu:NoExecute',
    '--hostname-override',
    'Node-7',
  ]);
  const setup = resolveKubeletSetup(flags, env('/work'));
  t.is(setup.kubelet.nodeName, 'node-7');
  t.deepEqual(setup.kubelet.apiServer, {
    kubeconfig: '/work/kc.yaml',
    bootstrapKubeconfig: '/etc/bootstrap.kubeconfig',
    nodeLabels: { a: 'b', zone: 'z1', c: 'd' },
    registerWithTaints: [
      { key: 'dedicated', value: 'db', effect: 'NoSchedule' },
      { key: 'gpu', effect: 'NoExecute' },
    ],
  });
  t.is(resolveKubeletSetup({}, env('/work')).kubelet.apiServer, undefined, 'standalone without --kubeconfig');
});

test('bad --node-labels / --register-with-taints values, and either without --kubeconfig, are refused by name', (t) => {
  const setup = (args: string[]) => resolveKubeletSetup(parseKubeletArgs(args).flags, env('/work'));
  t.throws(() => setup(['--kubeconfig', 'k', '--register-with-taints', 'a=b:Never']), {
    message:
      'flag --register-with-taints: invalid taint "a=b:Never": effect must be NoSchedule, PreferNoSchedule or NoExecute',
  });
  t.throws(() => setup(['--kubeconfig', 'k', '--node-labels', 'nolabel']), {
    message: 'flag --node-labels: invalid label "nolabel": want key=value',
  });
  t.throws(() => setup(['--node-labels', 'a=b']), {
    message: 'flag --node-labels needs --kubeconfig: there is no API server to register with',
  });
});

cpTest(
  'nodelet kubelet --kubeconfig joins the control plane with its labels and taints, and stops on SIGTERM',
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'nodelet-join-'));
    const cp = new controlPlane.ControlPlane({
      dataDir: join(dir, 'cp'),
      clock: new RealClock(),
      logger: createLogger({ sink: new MemorySink().sink }),
      port: 0,
    });
    await cp.start();
    const kubeconfig = await cp.nodeKubeconfig('join-1');
    writeFileSync(
      join(dir, 'nodelet.yaml'),
      `apiVersion: nodelet.dev/v1alpha1\nkind: NodeletConfiguration\nkubelet:\n  podLogsDir: ./pod-logs\n`,
    );
    const child = spawn(
      process.execPath,
      [
        MAIN,
        'kubelet',
        '--kubeconfig',
        kubeconfig,
        '--hostname-override',
        'join-1',
        '--node-labels',
        'tier=db',
        '--register-with-taints',
        'dedicated=db:NoSchedule',
        '--root-dir',
        join(dir, 'root'),
        '--read-only-port',
        '0',
        '--port',
        '0',
        '--config',
        join(dir, 'nodelet.yaml'),
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (c: string) => (stderr += c));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      const k8s = await import('@kubernetes/client-node');
      const kc = new k8s.KubeConfig();
      kc.loadFromFile(cp.kubeconfigPath);
      const core = kc.makeApiClient(k8s.CoreV1Api);
      const node = await pollUntil(
        'the node to be Ready',
        async () => {
          const n = await core.readNode({ name: 'join-1' }).catch(() => undefined);
          return n?.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True' ? n : undefined;
        },
        { timeoutMs: 20_000, intervalMs: 100, describe: () => stderr },
      );
      t.is(node.metadata?.labels?.tier, 'db');
      t.is(node.metadata?.labels?.['kubernetes.io/hostname'], 'join-1');
      t.deepEqual(
        node.spec?.taints?.map((x) => [x.key, x.value, x.effect]),
        [['dedicated', 'db', 'NoSchedule']],
      );
      t.regex(stderr, /nodelet kubelet running .*kubeconfig=/);
      child.kill('SIGTERM');
      t.is(await exited, 0);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      await cp.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  },
);
