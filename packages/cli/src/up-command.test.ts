import test from 'ava';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requireKubectl } from './e2e-containerd/nodelet-up.js';
import { MAIN, nodelet, pollUntil } from './test-helpers.js';
import { parseUpArgs } from './up-flags.js';

const kubectlTest = requireKubectl(test) ? test : () => undefined;

// `nodelet up` as a user runs it: the real command in a child process, the real kubectl against it.

const kubectlPath = process.env.KUBECTL ?? '/usr/bin/kubectl';

function kubectl(
  kubeconfig: string,
  args: string[],
  input?: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      kubectlPath,
      ['--kubeconfig', kubeconfig, '--cache-dir', join(kubeconfig, '..', 'kubectl-cache'), ...args],
      { timeout: 30_000, env: { ...process.env, KUBECONFIG: '' } },
      (err, stdout, stderr) =>
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
    if (input !== undefined) child.stdin?.end(input);
  });
}

interface Up {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | null>;
}

async function up(dataDir: string, extraArgs: string[] = []): Promise<Up> {
  // No proxy here (it would program the host's iptables); e2e-proxy/ tests it.
  const child = spawn(process.execPath, [
    MAIN,
    'up',
    '--data-dir',
    dataDir,
    '--port',
    '0',
    '--proxy-mode',
    'none',
    ...extraArgs,
  ]);
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  await pollUntil(
    'nodelet up to print its kubectl line',
    async () => (/^try: /m.test(out) ? true : undefined),
    {
      timeoutMs: 20_000,
      describe: () => `stdout: ${out}\nstderr: ${err}`,
    },
  );
  return { child, stdout: () => out, stderr: () => err, exited };
}

kubectlTest(
  'nodelet up serves kubectl with a Ready node running pods, stops on SIGTERM and keeps its state',
  async (t) => {
    t.timeout(90_000);
    const dataDir = mkdtempSync(join(tmpdir(), 'nodelet-up-'));
    const kubeconfig = join(dataDir, 'kubeconfig');
    const started: Up[] = [];
    try {
      const first = await up(dataDir);
      started.push(first);
      t.regex(
        first.stdout(),
        /^nodelet control plane is serving at https:\/\/127\.0\.0\.1:\d+ with 1 node \(fake runtime\)$/m,
      );
      t.true(first.stdout().includes(`kubeconfig: ${kubeconfig}\n`));
      t.true(first.stdout().includes(`try: kubectl --kubeconfig ${kubeconfig} get nodes\n`));
      const ns = await kubectl(kubeconfig, ['get', 'namespaces', '--no-headers']);
      t.is(ns.code, 0, ns.stderr);
      t.deepEqual(
        ns.stdout
          .trim()
          .split('\n')
          .map((l) => l.split(/\s+/)[0]),
        ['default', 'kube-node-lease', 'kube-public', 'kube-system'],
      );
      // The kubelet of the node joined: the node is Ready and runs a pod on the fake runtime.
      const nodes = await pollUntil(
        'the node to be Ready',
        async () => {
          const r = await kubectl(kubeconfig, ['get', 'nodes', '--no-headers']);
          return /\sReady\s/.test(r.stdout) ? r.stdout : undefined;
        },
        { timeoutMs: 30_000 },
      );
      t.is(nodes.trim().split('\n').length, 1);
      const pod = await kubectl(kubeconfig, ['run', 'web', '--image=nginx:1.27']);
      t.is(pod.code, 0, pod.stderr);
      await pollUntil(
        'the pod to run',
        async () => {
          const r = await kubectl(kubeconfig, ['get', 'pod', 'web', '--no-headers']);
          return /^web\s+1\/1\s+Running/.test(r.stdout) ? true : undefined;
        },
        { timeoutMs: 30_000 },
      );
      // kubectl logs: the API server reads them from the kubelet's HTTPS API with its client certificate,
      // authorized there by a SubjectAccessReview back to the API server.
      const logs = await kubectl(kubeconfig, ['logs', 'web']);
      t.is(logs.code, 0, logs.stderr);
      const previous = await kubectl(kubeconfig, ['logs', 'web', '--previous']);
      t.regex(previous.stderr, /previous terminated container "web" in pod "web" not found/);
      // nodelet logs straight from the kubelet API, with the admin certificate it prints; 401 without.
      const kubeletUrl = /^kubelet \S+: (https:\/\/127\.0\.0\.1:\d+)$/m.exec(first.stdout())![1]!;
      const cert = [
        '--client-certificate',
        join(dataDir, 'pki', 'admin.crt'),
        '--client-key',
        join(dataDir, 'pki', 'admin.key'),
      ];
      const direct = await nodelet(['logs', 'web', '--server', kubeletUrl, ...cert]);
      t.is(direct.code, 0, direct.stderr);
      t.deepEqual(await nodelet(['logs', 'web', '-c', 'web', '--server', kubeletUrl]), {
        code: 1,
        stdout: '',
        stderr: 'Error from server (Unauthorized): Unauthorized\n',
      });
      const deleted = await kubectl(kubeconfig, ['delete', 'pod', 'web']);
      t.is(deleted.stdout.trim(), 'pod "web" deleted');
      const applied = await kubectl(
        kubeconfig,
        ['apply', '-f', '-'],
        'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kept\ndata:\n  a: "1"\n',
      );
      t.is(applied.code, 0, applied.stderr);
      const rv = (
        await kubectl(kubeconfig, ['get', 'configmap', 'kept', '-o', 'jsonpath={.metadata.resourceVersion}'])
      ).stdout;
      first.child.kill('SIGTERM');
      t.is(await first.exited, 0);

      const second = await up(dataDir);
      started.push(second);
      try {
        const again = await kubectl(kubeconfig, [
          'get',
          'configmap',
          'kept',
          '-o',
          'jsonpath={.metadata.resourceVersion}',
        ]);
        t.is(again.stdout, rv);
        const unchanged = await kubectl(
          kubeconfig,
          ['apply', '-f', '-'],
          'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kept\ndata:\n  a: "1"\n',
        );
        t.is(unchanged.stdout.trim(), 'configmap/kept unchanged');
      } finally {
        second.child.kill('SIGTERM');
        t.is(await second.exited, 0);
      }
    } finally {
      // A failed assertion must not leave a cluster running.
      for (const u of started) if (u.child.exitCode === null) u.child.kill('SIGKILL');
      rmSync(dataDir, { recursive: true, force: true });
    }
  },
);

test('nodelet up in a 0755 directory keeps its data dir to its owner, Secrets encrypted, requests audited', async (t) => {
  t.timeout(60_000);
  const parent = mkdtempSync(join(tmpdir(), 'nodelet-up-perm-'));
  chmodSync(parent, 0o755);
  const dataDir = join(parent, 'data');
  const node = 'perm-node';
  const encryption = join(parent, 'encryption.yaml');
  writeFileSync(
    encryption,
    'apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n' +
      `  - resources: [secrets]\n    providers:\n      - aesgcm: {keys: [{name: k1, secret: "${randomBytes(32).toString('base64')}"}]}\n`,
  );
  const policy = join(parent, 'audit-policy.yaml');
  writeFileSync(policy, 'apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n  - level: Metadata\n');
  const auditLog = join(parent, 'audit', 'audit.log');
  let started: Up | undefined;
  try {
    started = await up(dataDir, [
      '--hostname-override',
      node,
      '--encryption-provider-config',
      encryption,
      '--audit-policy-file',
      policy,
      '--audit-log-path',
      auditLog,
    ]);
    // The kubelet's requests are in the audit log under its node identity.
    await pollUntil(
      'the kubelet in the audit log',
      async () =>
        readFileSync(auditLog, 'utf8').includes(`"username":"system:node:${node}"`) ? true : undefined,
      { timeoutMs: 20_000 },
    );
    t.is(statSync(auditLog).mode & 0o777, 0o600);
    // The kubelet's own trees keep the modes pod volumes need (see the controlplane's data-dir.ts);
    // their roots, and everything else, are the owner's alone.
    const kubeletTrees = [join(dataDir, 'nodes', node, 'kubelet'), join(dataDir, 'nodes', node, 'pods')];
    const loose: string[] = [];
    const walk = (path: string) => {
      const info = lstatSync(path);
      if (info.mode & 0o077) loose.push(`${path} ${(info.mode & 0o777).toString(8)}`);
      if (info.isDirectory() && !kubeletTrees.includes(path))
        for (const entry of readdirSync(path)) walk(join(path, entry));
    };
    walk(dataDir);
    t.deepEqual(loose, []);
    for (const dir of kubeletTrees) t.is(statSync(dir).mode & 0o777, 0o700, dir);
    for (const file of ['state.db', 'state.db-wal', 'pki/ca.crt', `nodes/${node}/client-ca.crt`])
      t.true(existsSync(join(dataDir, file)), file);
    started.child.kill('SIGTERM');
    t.is(await started.exited, 0);
    // The bootstrap token's Secret is encrypted in state.db: its secret part is nowhere in the raw bytes.
    const token = /token: ([a-z0-9]{6})\.([a-z0-9]{16})/.exec(
      readFileSync(join(dataDir, 'bootstrap-kubeconfig'), 'utf8'),
    )!;
    const raw = Buffer.concat(
      ['state.db', 'state.db-wal']
        .filter((f) => existsSync(join(dataDir, f)))
        .map((f) => readFileSync(join(dataDir, f))),
    );
    t.false(raw.includes(token[2]!));
    t.false(raw.includes(Buffer.from(token[2]!).toString('base64')));
    for (const line of readFileSync(auditLog, 'utf8').trim().split('\n'))
      t.is(JSON.parse(line).kind, 'Event');
  } finally {
    if (started?.child.exitCode === null) started.child.kill('SIGKILL');
    rmSync(parent, { recursive: true, force: true });
  }
});

test('nodelet up refuses bad flags with one line that names the flag', async (t) => {
  t.throws(() => parseUpArgs(['--runtime', 'docker']), {
    message: 'flag --runtime must be fake or containerd, got "docker"',
  });
  t.throws(() => parseUpArgs(['--nodes', '0']), {
    message: /flag --nodes must be an integer from 1 to 1000/,
  });
  t.throws(() => parseUpArgs(['--port', 'x']), { message: /flag --port must be an integer/ });
  t.is(parseUpArgs([]).flags.port, 6443);
  t.is(
    parseUpArgs(['--encryption-provider-config', 'enc.yaml']).flags.encryptionProviderConfig,
    join(process.cwd(), 'enc.yaml'),
  );
  const audit = parseUpArgs(['--audit-log-path', '-', '--audit-policy-file', 'policy.yaml']).flags;
  t.is(audit.auditLogPath, '-');
  t.is(audit.auditPolicyFile, join(process.cwd(), 'policy.yaml'));
  t.throws(() => parseUpArgs(['--address', 'not-an-ip']), {
    message: /^flag --address must be an IP address of this machine .*, got "not-an-ip"$/,
  });
  t.is(parseUpArgs(['--address', '10.88.0.1']).flags.address, '10.88.0.1');
  const help = await nodelet(['up', '--help']);
  t.is(help.code, 0);
  t.regex(help.stdout, /^Usage:\n {2}nodelet up \[flags\]$/m);
  t.regex(
    help.stdout,
    /^ {2}--proxy-mode MODE {3}the proxy: iptables \| nftables \| ipvs \| userspace \| none/m,
  );
  t.is(parseUpArgs(['--proxy-mode', 'nftables']).flags.proxyMode, 'nftables');
  t.is(parseUpArgs([]).flags.proxyMode, undefined);
  t.deepEqual(parseUpArgs(['--user', 'alice=view', '--user', 'bob@example.com=edit']).flags.users, [
    { name: 'alice', clusterRole: 'view' },
    { name: 'bob@example.com', clusterRole: 'edit' },
  ]);
  t.throws(() => parseUpArgs(['--user', 'alice']), {
    message: 'flag --user must be NAME=CLUSTERROLE (e.g. --user alice=view), got "alice"',
  });
  t.throws(() => parseUpArgs(['--user', 'al ice=view']), { message: /flag --user must be NAME=CLUSTERROLE/ });
  t.deepEqual(parseUpArgs(['--authorization-mode', 'Node, RBAC']).flags.authorizationModes, ['Node', 'RBAC']);
  t.is(parseUpArgs([]).flags.authorizationModes, undefined, 'the control plane defaults it: Node,RBAC');
  t.throws(() => parseUpArgs(['--authorization-mode', 'Node,']), {
    message: 'flag --authorization-mode must list modes separated by commas (e.g. Node,RBAC), got "Node,"',
  });
});

test('nodelet up refuses an unknown authorization mode before it starts anything', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-up-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const r = await nodelet(['up', '--data-dir', dir, '--port', '0', '--authorization-mode', 'Node,ABAC']);
  t.is(r.code, 1);
  t.regex(
    r.stderr,
    /nodelet up flags: field "authorizationModes\[1\]" must be one of "Node", "RBAC", "AlwaysAllow", "AlwaysDeny"/,
  );
  t.false(existsSync(join(dir, 'state.db')), 'nothing was started');
});

test('nodelet up --cluster-cidr: an IPv4 CIDR of /8 to /24 (nodes get a /24 each), else one line naming the flag', (t) => {
  t.is(parseUpArgs([]).flags.clusterCidr, undefined, 'the control plane defaults it: 10.244.0.0/16');
  t.is(parseUpArgs(['--cluster-cidr', '10.32.0.0/12']).flags.clusterCidr, '10.32.0.0/12');
  t.is(parseUpArgs(['--nodes', '256']).flags.nodes, 256, 'the default range holds 256 node CIDRs');
  t.throws(() => parseUpArgs(['--nodes', '300']), {
    message:
      'flag --nodes 300 needs a /24 pod CIDR per node, but --cluster-cidr 10.244.0.0/16 holds 256; give a larger range, e.g. --cluster-cidr 10.0.0.0/15',
  });
  t.is(parseUpArgs(['--nodes', '1000', '--cluster-cidr', '10.0.0.0/14']).flags.nodes, 1000);
  for (const bad of ['10.244.0.0', '10.244.0.0/25', '300.1.0.0/16', 'fd00::/48', 'pods']) {
    t.throws(() => parseUpArgs(['--cluster-cidr', bad]), {
      message: `flag --cluster-cidr must be an IPv4 CIDR with a prefix from /8 to /24 (each node gets a /24 of it), such as 10.244.0.0/16, got ${JSON.stringify(bad)}`,
    });
  }
});

test('nodelet up takes the API server request limits, as kube-apiserver spells them', (t) => {
  const flags = parseUpArgs([
    '--request-timeout',
    '1m30s',
    '--max-requests-inflight',
    '800',
    '--max-mutating-requests-inflight=0',
  ]).flags;
  t.is(flags.requestTimeoutMs, 90_000);
  t.is(flags.maxRequestsInflight, 800);
  t.is(flags.maxMutatingRequestsInflight, 0);
  t.is(parseUpArgs(['--request-timeout', '0']).flags.requestTimeoutMs, 0);
  const defaults = parseUpArgs([]).flags;
  t.is(defaults.requestTimeoutMs, undefined, 'the control plane defaults apply: 60 s, 400 and 200');
  t.throws(() => parseUpArgs(['--request-timeout', '60']), {
    message: 'flag --request-timeout must be a duration such as 60s, 1m30s or 0, got "60"',
  });
  t.throws(() => parseUpArgs(['--max-requests-inflight=-1']), {
    message: 'flag --max-requests-inflight must be an integer from 0 to 1000000, got "-1"',
  });
  t.throws(() => parseUpArgs(['--max-mutating-requests-inflight', 'many']), {
    message: /^flag --max-mutating-requests-inflight must be an integer/,
  });
});

test('nodelet up refuses a bad proxy mode or proxy section before it starts anything', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-up-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const upper = await nodelet(['up', '--data-dir', dir, '--port', '0', '--proxy-mode', 'IPTables']);
  t.is(upper.code, 1);
  t.regex(
    upper.stderr,
    /--proxy-mode must be one of iptables, nftables, ipvs, userspace, none \(or a plugin package or path\); got "IPTables"/,
  );
  const missing = await nodelet(['up', '--data-dir', dir, '--port', '0', '--proxy-mode', 'ipfw']);
  t.regex(
    missing.stderr,
    /proxy mode "ipfw" is not one of iptables, nftables, ipvs, userspace, and no plugin package or file of that name loads/,
  );
  writeFileSync(
    join(dir, 'nodelet.yaml'),
    'apiVersion: nodelet.dev/v1alpha1\nkind: NodeletConfiguration\nproxy:\n  mode: userspace\n  services: ./svc\n',
  );
  const services = await nodelet([
    'up',
    '--data-dir',
    dir,
    '--port',
    '0',
    '--config',
    join(dir, 'nodelet.yaml'),
  ]);
  t.regex(
    services.stderr,
    /nodelet\.yaml: nodelet up proxies the Services of its own API server; remove proxy\.services, proxy\.kubeconfig and proxy\.master/,
  );
  t.false(existsSync(join(dir, 'state.db')), 'nothing was started');
});

test('nodelet up takes the node lifecycle timing and the metric resolution, as upstream spells them', (t) => {
  const { controlPlaneLoops } = parseUpArgs([
    '--node-monitor-period',
    '1s',
    '--node-monitor-grace-period=4s',
    '--default-not-ready-toleration-seconds',
    '10',
    '--default-unreachable-toleration-seconds',
    '0',
    '--metric-resolution=2s',
  ]).flags;
  t.deepEqual(controlPlaneLoops, {
    nodeMonitorPeriodMs: 1_000,
    nodeMonitorGracePeriodMs: 4_000,
    defaultNotReadyTolerationSeconds: 10,
    defaultUnreachableTolerationSeconds: 0,
    metricResolutionMs: 2_000,
  });
  t.deepEqual(
    parseUpArgs([]).flags.controlPlaneLoops,
    {},
    'the control plane defaults apply: 5s, 50s, 300, 300, 15s',
  );
  t.throws(() => parseUpArgs(['--metric-resolution', '0s']), {
    message: 'flag --metric-resolution must be a positive duration such as 5s or 1m, got "0s"',
  });
  t.throws(() => parseUpArgs(['--node-monitor-grace-period', '40']), {
    message: 'flag --node-monitor-grace-period must be a positive duration such as 5s or 1m, got "40"',
  });
  t.throws(() => parseUpArgs(['--default-unreachable-toleration-seconds=-1']), {
    message: /^flag --default-unreachable-toleration-seconds must be an integer from 0/,
  });
});
