// TLS bootstrapping end to end: `nodelet kubelet --bootstrap-kubeconfig` against the embedded control
// plane, which authenticates the bootstrap token, auto-approves the node's CSR and signs it with the
// cluster CA. The real kubectl reads the result.
import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { ControlPlane } from '@nodelet/controlplane';
import { createLogger, MemorySink, RealClock } from '@nodelet/kernel';
import { kubectlPath, requireKubectl } from './e2e-containerd/nodelet-up.js';
import { KubeletProcess, pollUntil } from './test-helpers.js';

const haveKubectl = requireKubectl(test);
const kubectlTest = haveKubectl ? test.serial : () => undefined;

async function startControlPlane(t: { teardown: (fn: () => Promise<void> | void) => void }) {
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-bootstrap-'));
  const logs = new MemorySink();
  const cp = new ControlPlane({
    dataDir: join(dir, 'cp'),
    clock: new RealClock(),
    logger: createLogger({ sink: logs.sink, level: 'info' }),
    port: 0,
  });
  await cp.start();
  t.teardown(async () => {
    await cp.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  const kubectl = (...args: string[]) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
      execFile(
        kubectlPath,
        ['--kubeconfig', cp.kubeconfigPath, '--cache-dir', join(dir, 'kubectl-cache'), ...args],
        { timeout: 30_000, env: { ...process.env, KUBECONFIG: '' } },
        (err, stdout, stderr) =>
          resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      ),
    );
  return { cp, dir, logs, kubectl };
}

const csrRows = (text: string) =>
  text
    .trim()
    .split('\n')
    .slice(1)
    .filter(Boolean)
    .map((l) => l.split(/\s{2,}/));

kubectlTest(
  'a kubelet with only the bootstrap kubeconfig gets its certificate, registers Ready and runs a pod',
  async (t) => {
    const { cp, dir, kubectl } = await startControlPlane(t);
    const bootstrapText = readFileSync(cp.bootstrapKubeconfigPath, 'utf8');
    const tokenId = /token: ([a-z0-9]{6})\.[a-z0-9]{16}/.exec(bootstrapText)?.[1];
    t.truthy(tokenId, 'the bootstrap kubeconfig holds a bootstrap token');
    t.false(bootstrapText.includes('client-certificate'), 'and no client certificate');

    const nodeKubeconfig = join(dir, 'node-b.kubeconfig');
    const kubelet = await KubeletProcess.start(t, 'node-b', [
      '--bootstrap-kubeconfig',
      cp.bootstrapKubeconfigPath,
      '--kubeconfig',
      nodeKubeconfig,
    ]);

    const csr = await pollUntil(
      'the CSR to be approved and issued',
      async () => {
        const r = await kubectl('get', 'csr');
        const row = csrRows(r.stdout)[0];
        return row && row[5] === 'Approved,Issued' ? row : undefined;
      },
      { timeoutMs: 20_000, intervalMs: 200, describe: () => kubelet.stderr() },
    );
    t.regex(csr[0]!, /^node-csr-/);
    t.is(csr[2], 'kubernetes.io/kube-apiserver-client-kubelet');
    t.is(csr[3], `system:bootstrap:${tokenId}`, 'the requestor is the token, set by the server');

    await pollUntil(
      'node-b to be Ready',
      async () => {
        const r = await kubectl('get', 'node', 'node-b', '--no-headers');
        return /\bReady\b/.test(r.stdout) ? true : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 200, describe: () => kubelet.stderr() },
    );
    t.true(existsSync(nodeKubeconfig), 'the node kubeconfig was written');
    const pem = readFileSync(join(kubelet.dir, 'root', 'pki', 'kubelet-client-current.pem'), 'utf8');
    const cert = new X509Certificate(pem);
    t.regex(cert.subject, /CN=system:node:node-b/);
    t.true(cert.verify(new X509Certificate(cp.caCert).publicKey), 'signed by the cluster CA');

    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'joined', namespace: 'default' },
      spec: { nodeName: 'node-b', containers: [{ name: 'c', image: 'busybox' }] },
    };
    writeFileSync(join(dir, 'pod.json'), JSON.stringify(pod));
    t.is((await kubectl('apply', '-f', join(dir, 'pod.json'))).code, 0);
    await pollUntil(
      'the pod bound to node-b to run',
      async () => {
        const r = await kubectl('get', 'pod', 'joined', '-o', 'jsonpath={.status.phase}');
        return r.stdout === 'Running' ? true : undefined;
      },
      { timeoutMs: 20_000, intervalMs: 200, describe: () => kubelet.stderr() },
    );

    // Started again, the kubelet uses the credentials it wrote: no second CSR.
    await kubelet.stop();
    const again = await KubeletProcess.start(t, 'node-b', [
      '--bootstrap-kubeconfig',
      cp.bootstrapKubeconfigPath,
      '--kubeconfig',
      nodeKubeconfig,
    ]);
    await pollUntil(
      'the restarted kubelet to renew its lease',
      async () => {
        const r = await kubectl(
          'get',
          'lease',
          '-n',
          'kube-node-lease',
          'node-b',
          '-o',
          'jsonpath={.spec.renewTime}',
        );
        return r.stdout && Date.parse(r.stdout) > Date.now() - 5_000 && again.stderr().includes('Node')
          ? true
          : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 250, describe: () => again.stderr() },
    );
    t.is(csrRows((await kubectl('get', 'csr')).stdout).length, 1, 'no new CSR');
    t.false(again.stderr().includes('Requesting a client certificate'));
  },
);

kubectlTest(
  'refused credentials: an unknown bootstrap token and a certificate of another CA are named errors; static pods run',
  async (t) => {
    const { cp, dir } = await startControlPlane(t);
    const unknown = join(dir, 'unknown-token.kubeconfig');
    writeFileSync(
      unknown,
      readFileSync(cp.bootstrapKubeconfigPath, 'utf8').replace(
        /token: [a-z0-9]{6}\.[a-z0-9]{16}/,
        'token: abcdef.0123456789abcdef',
      ),
    );
    const k1 = await KubeletProcess.start(t, 'node-c', [
      '--bootstrap-kubeconfig',
      unknown,
      '--kubeconfig',
      join(dir, 'node-c.kubeconfig'),
    ]);
    k1.writeManifest('static.yaml', staticPod('static-c'));
    await pollUntil(
      'the refusal to be logged',
      async () =>
        k1
          .stderr()
          .includes(`refused the credentials of the bootstrap kubeconfig ${unknown} (401 Unauthorized)`)
          ? true
          : undefined,
      { timeoutMs: 20_000, intervalMs: 100, describe: () => k1.stderr() },
    );
    await pollUntil(
      'the static pod to run regardless',
      async () =>
        (await k1.rows()).some((r) => r.NAME === 'static-c-node-c' && r.STATUS === 'Running')
          ? true
          : undefined,
      { timeoutMs: 20_000, intervalMs: 100, describe: () => k1.stderr() },
    );
    t.false(existsSync(join(dir, 'node-c.kubeconfig')));

    // A node kubeconfig whose client certificate another CA signed (another control plane's).
    const other = new ControlPlane({
      dataDir: join(dir, 'other'),
      clock: new RealClock(),
      logger: createLogger({ sink: new MemorySink().sink, level: 'info' }),
      port: 0,
    });
    await other.start();
    const foreign = await other.nodeKubeconfig('node-d');
    await other.stop();
    const wrongCa = join(dir, 'wrong-ca.kubeconfig');
    const ours = readFileSync(cp.kubeconfigPath, 'utf8');
    const server = /server: (\S+)/.exec(ours)![1]!;
    const caData = /certificate-authority-data: (\S+)/.exec(ours)![1]!;
    writeFileSync(
      wrongCa,
      readFileSync(foreign, 'utf8')
        .replace(/server: \S+/, `server: ${server}`)
        .replace(/certificate-authority-data: \S+/, `certificate-authority-data: ${caData}`),
    );
    const k2 = await KubeletProcess.start(t, 'node-d', ['--kubeconfig', wrongCa]);
    await pollUntil(
      'the refused certificate to be logged once',
      async () =>
        k2.stderr().includes(`refused the credentials of kubeconfig ${wrongCa} (401 Unauthorized)`)
          ? true
          : undefined,
      { timeoutMs: 20_000, intervalMs: 100, describe: () => k2.stderr() },
    );
    t.is(
      k2
        .stderr()
        .split('\n')
        .filter((l) => l.includes('HTTP 401')).length,
      0,
      'no 401 from each controller',
    );
  },
);

function staticPod(name: string): string {
  return `apiVersion: v1\nkind: Pod\nmetadata:\n  name: ${name}\nspec:\n  containers:\n  - name: c\n    image: busybox\n`;
}
