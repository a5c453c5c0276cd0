/**
 * The kubelet API's streaming cost on containerd, each as a ratio to a floor measured in the same run:
 *
 * - exec round trip: `kubectl exec web -- true` through nodelet up's API server, the kubelet's 10250 and
 *   containerd's streaming server, ÷ `ctr task exec` of the same command in the same container;
 * - port-forward throughput: a GET of a 64 MiB file through `kubectl port-forward` on 127.0.0.1, ÷ the same
 *   GET straight to the pod's IP on the CNI bridge.
 *
 *   node bench/dist/streaming.js [--runs 20] [--mib 64] [--out bench/results/streaming.json]
 *
 * Needs root, containerd (scripts/containerd/setup.sh), kubectl and ctr. Traffic stays on the machine:
 * 127.0.0.1 and the pod's address on the bridge.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const here = dirname(fileURLToPath(import.meta.url));
const MAIN = resolve(here, '../../packages/cli/dist/main.js');
const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '20' },
    mib: { type: 'string', default: '64' },
    out: { type: 'string', default: resolve(here, '../results/streaming.json') },
  },
});
const runs = Number(values.runs);
const mib = Number(values.mib);

function run(
  cmd: string,
  args: string[],
  env?: NodeJS.ProcessEnv,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) =>
    execFile(
      cmd,
      args,
      { env: { ...process.env, ...env }, maxBuffer: 64 << 20, timeout: 120_000 },
      (err, stdout, stderr) =>
        done({ code: err ? Number((err as { code?: number }).code ?? 1) || 1 : 0, stdout, stderr }),
    ),
  );
}

async function ok(cmd: string, args: string[], env?: NodeJS.ProcessEnv): Promise<string> {
  const r = await run(cmd, args, env);
  if (r.code !== 0) throw new Error(`${cmd} ${args.join(' ')}: ${r.stderr || r.stdout}`);
  return r.stdout;
}

async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 90_000): Promise<T> {
  for (const deadline = Date.now() + timeoutMs; ;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Seconds to GET the whole body from host:port. */
function timedGet(host: string, port: number, path: string): Promise<{ seconds: number; bytes: number }> {
  return new Promise((done, fail) => {
    const t0 = process.hrtime.bigint();
    const req = get({ host, port, path, agent: false, timeout: 60_000 }, (res) => {
      let bytes = 0;
      res.on('data', (c: Buffer) => (bytes += c.length));
      res.on('end', () => done({ seconds: Number(process.hrtime.bigint() - t0) / 1e9, bytes }));
      res.on('error', fail);
    });
    req.on('error', fail);
    req.on('timeout', () => req.destroy(new Error('GET timed out')));
  });
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'nodelet-bench-streaming-'));
  const node = `bench-stream-${process.pid}`;
  const up: ChildProcess = spawn(
    process.execPath,
    [
      MAIN,
      'up',
      '--data-dir',
      dataDir,
      '--port',
      '0',
      '--proxy-mode',
      'none',
      '--runtime',
      'containerd',
      '--hostname-override',
      node,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  up.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  up.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const env = { KUBECONFIG: join(dataDir, 'kubeconfig') };
  const kubectl = (args: string[]) => ok('kubectl', args, env);
  try {
    await waitFor('nodelet up', async () => (/^try: /m.test(out) ? true : undefined), 60_000);
    const pod = `apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: web
    image: nodelet.test/busybox:1
    command: ["sh", "-c", "mkdir -p /www && head -c ${mib * 1024 * 1024} /dev/zero > /www/blob && exec httpd -f -p 8080 -h /www"]
    ports: [{containerPort: 8080}]
`;
    const file = join(dataDir, 'pod.yaml');
    writeFileSync(file, pod);
    await kubectl(['apply', '-f', file]);
    await kubectl(['wait', '--for=condition=Ready', 'pod/web', '--timeout=120s']);
    const podIP = (await kubectl(['get', 'pod', 'web', '-o', 'jsonpath={.status.podIP}'])).trim();
    const containerId = (
      await kubectl(['get', 'pod', 'web', '-o', 'jsonpath={.status.containerStatuses[0].containerID}'])
    )
      .replace(/^[a-z]+:\/\//, '')
      .trim();
    await waitFor('the blob to be served', async () =>
      (await timedGet(podIP, 8080, '/blob').catch(() => ({ bytes: 0 }))).bytes === mib << 20
        ? true
        : undefined,
    );

    // Exec round trips, alternating so that load drifts hit both alike.
    const kubectlExec: number[] = [];
    const ctrExec: number[] = [];
    for (let i = 0; i < runs; i++) {
      let t0 = process.hrtime.bigint();
      await kubectl(['exec', 'web', '--', 'true']);
      kubectlExec.push(Number(process.hrtime.bigint() - t0) / 1e6);
      t0 = process.hrtime.bigint();
      await ok('ctr', [
        '-n',
        'k8s.io',
        'task',
        'exec',
        '--exec-id',
        `bench-${process.pid}-${i}`,
        containerId,
        'true',
      ]);
      ctrExec.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }

    // Port-forward throughput.
    const forward = spawn('kubectl', ['port-forward', '--address', '127.0.0.1', 'pod/web', ':8080'], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let fwdOut = '';
    forward.stdout!.on('data', (d: Buffer) => (fwdOut += d.toString()));
    let forwarded: number[] = [];
    let direct: number[] = [];
    try {
      const port = await waitFor('port-forward', async () => {
        const m = /Forwarding from 127\.0\.0\.1:(\d+)/.exec(fwdOut);
        return m ? Number(m[1]) : undefined;
      });
      for (let i = 0; i < 5; i++) {
        const f = await timedGet('127.0.0.1', port, '/blob');
        const d = await timedGet(podIP, 8080, '/blob');
        if (f.bytes !== mib << 20 || d.bytes !== mib << 20)
          throw new Error(`short body: ${f.bytes} / ${d.bytes}`);
        forwarded.push(mib / f.seconds);
        direct.push(mib / d.seconds);
      }
    } finally {
      forward.kill('SIGTERM');
    }
    forwarded = forwarded.sort((a, b) => a - b);
    direct = direct.sort((a, b) => a - b);

    const result = {
      date: new Date().toISOString(),
      loadavg1: loadavg()[0],
      runs,
      exec: {
        kubectlMedianMs: median(kubectlExec),
        ctrMedianMs: median(ctrExec),
        ratio: median(kubectlExec) / median(ctrExec),
        kubectlMs: kubectlExec,
        ctrMs: ctrExec,
      },
      portForward: {
        mib,
        forwardedMedianMiBps: median(forwarded),
        directMedianMiBps: median(direct),
        ratio: median(forwarded) / median(direct),
        forwardedMiBps: forwarded,
        directMiBps: direct,
      },
    };
    console.log('| measure | nodelet | floor | ratio |');
    console.log('| :-- | --: | --: | --: |');
    console.log(
      `| exec round trip (median of ${runs}) | ${result.exec.kubectlMedianMs.toFixed(0)} ms (kubectl exec) | ${result.exec.ctrMedianMs.toFixed(0)} ms (ctr task exec) | ${result.exec.ratio.toFixed(2)} |`,
    );
    console.log(
      `| port-forward throughput (median of 5 × ${mib} MiB) | ${result.portForward.forwardedMedianMiBps.toFixed(0)} MiB/s | ${result.portForward.directMedianMiBps.toFixed(0)} MiB/s (pod IP) | ${result.portForward.ratio.toFixed(3)} |`,
    );
    mkdirSync(dirname(values.out!), { recursive: true });
    writeFileSync(values.out!, JSON.stringify(result, null, 2) + '\n');
  } finally {
    await run('kubectl', ['delete', 'pod', 'web', '--grace-period=1', '--wait=true', '--timeout=60s'], env);
    const exited = new Promise((r) => up.once('exit', r));
    up.kill('SIGTERM');
    await exited;
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
