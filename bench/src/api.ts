/**
 * The embedded control plane's API throughput and watch fan-out, against a floor measured in the same run:
 * raw better-sqlite3 inserts of the same pod JSON into a table of the same shape, one transaction each.
 *
 *   npm run bench:api --workspace @nodelet/bench -- [--pods 10000] [--watchers 100] [--concurrency 32]
 *   npm run bench:api --workspace @nodelet/bench -- --authorization [--pods 2000] [--rounds 3]
 *
 * Per run:
 *
 *   floor     a fresh SQLite file (WAL, synchronous=NORMAL, as the control plane opens it); for each pod
 *             one INSERT of its JSON (as the API server would store it) in its own transaction; inserts/s
 *             and the p99 of one insert.
 *   registry  the same pods through the control plane in-process (`Registry.create`: decoding, defaults,
 *             validation, the revision log, watch fan-out to nobody): what the HTTP layer adds to.
 *   api       a control plane in this process (its own data directory, controllers off so that the only
 *             writes are the creates) and a load process (child) that opens `--watchers` watch streams on
 *             the pods of the namespace, then POSTs the pods over HTTPS (keep-alive, `--concurrency` in
 *             flight, the admin's client certificate); creates/s over the whole run, p50/p99 latency of
 *             one create; the time until every watcher has received every ADDED event, and the events/s
 *             that makes across all watchers.
 *   ratio     floor inserts/s ÷ api creates/s: how many raw inserts one API create costs.
 *
 * With `--authorization`: creates/s of a user bound to `edit` (Node and RBAC authorizers on every create)
 * ÷ the same user with AlwaysAllow, alternating runs, medians; writes bench/results/api-authorization.json.
 *
 * Prints a table and writes bench/results/api.json.
 */
import { fork } from 'node:child_process';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import { ControlPlane, type AuthorizationMode } from '@nodelet/controlplane';
import { createLogger, RealClock } from '@nodelet/kernel';
import { percentile, podBody, type LoadRequest, type LoadResult } from './api-load.js';

const benchDir = join(dirname(fileURLToPath(import.meta.url)), '..');
const loadProcess = fileURLToPath(new URL('./api-load.js', import.meta.url));

// ----- the orchestrator ---------------------------------------------------------------------------------

interface Measured {
  perSecond: number;
  p99Ms: number;
  /** CPU time of this process (user + system) per operation. */
  cpuMsPerOp: number;
}

function floor(dir: string, pods: number): Measured {
  const db = new Database(join(dir, 'floor.db'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec(
    'CREATE TABLE log (rev INTEGER PRIMARY KEY, resource TEXT, namespace TEXT, name TEXT, op INTEGER, prev_rev INTEGER, value TEXT)',
  );
  const insert = db.prepare(
    'INSERT INTO log (rev, resource, namespace, name, op, prev_rev, value) VALUES (?, ?, ?, ?, ?, ?, ?)',
  );
  const write = db.transaction((i: number, json: string) =>
    insert.run(i + 1, 'pods', 'bench', `bench-${i}`, 1, null, json),
  );
  // The value as the server stores it: the defaulted pod with its metadata.
  const stored = (i: number) =>
    JSON.stringify({
      ...podBody(i),
      metadata: {
        ...podBody(i).metadata,
        namespace: 'bench',
        uid: crypto.randomUUID(),
        resourceVersion: String(i + 1),
        creationTimestamp: new Date().toISOString(),
      },
      status: { phase: 'Pending', qosClass: 'Burstable' },
    });
  const values = Array.from({ length: pods }, (_, i) => stored(i));
  const times: number[] = [];
  const cpu0 = process.cpuUsage();
  const start = performance.now();
  for (let i = 0; i < pods; i++) {
    const t0 = performance.now();
    write(i, values[i]!);
    times.push(performance.now() - t0);
  }
  const ms = performance.now() - start;
  const cpu = process.cpuUsage(cpu0);
  db.close();
  times.sort((a, b) => a - b);
  return {
    perSecond: (pods / ms) * 1000,
    p99Ms: percentile(times, 99),
    cpuMsPerOp: (cpu.user + cpu.system) / 1000 / pods,
  };
}

async function inProcess(dir: string, pods: number): Promise<Measured> {
  const cp = new ControlPlane({
    dataDir: join(dir, 'registry'),
    clock: new RealClock(),
    logger: createLogger({ level: 'warn' }),
    port: 0,
    controllers: { scheduler: false, endpointSlices: false },
  });
  await cp.start();
  const reg = cp.registry;
  reg.create(reg.byStorage('namespaces'), '', {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: 'bench' },
  });
  const podsType = reg.byStorage('pods');
  const times: number[] = [];
  const cpu0 = process.cpuUsage();
  const start = performance.now();
  for (let i = 0; i < pods; i++) {
    const t0 = performance.now();
    reg.create(podsType, 'bench', podBody(i));
    times.push(performance.now() - t0);
  }
  const ms = performance.now() - start;
  const cpu = process.cpuUsage(cpu0);
  await cp.stop();
  times.sort((a, b) => a - b);
  return {
    perSecond: (pods / ms) * 1000,
    p99Ms: percentile(times, 99),
    cpuMsPerOp: (cpu.user + cpu.system) / 1000 / pods,
  };
}

/**
 * How the API run authenticates and is authorized: the admin (system:masters, which the chain lets through
 * first) by default; `writer` creates as a user bound to `edit` in the namespace, so every create walks
 * the Node and RBAC authorizers — or, with `modes: ['AlwaysAllow']`, none.
 */
interface ApiAuth {
  writer?: boolean;
  modes?: AuthorizationMode[];
}

async function api(dir: string, pods: number, watchers: number, concurrency: number, auth: ApiAuth = {}) {
  const cp = new ControlPlane({
    dataDir: join(dir, `api-${(auth.modes ?? ['default']).join('-')}-${Date.now()}`),
    clock: new RealClock(),
    logger: createLogger({ level: 'warn' }),
    port: 0,
    controllers: { scheduler: false, endpointSlices: false },
    ...(auth.modes ? { authorizationModes: auth.modes } : {}),
  });
  await cp.start();
  const reg = cp.registry;
  reg.create(reg.byStorage('namespaces'), '', {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: 'bench' },
  });
  const credentials = auth.writer ? await cp.userCredentials('bench-writer') : cp.adminCredentials;
  if (auth.writer) {
    reg.create(reg.byStorage('rolebindings'), 'bench', {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'bench-writer' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'edit' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'bench-writer' }],
    });
  }
  const child = fork(loadProcess, ['--load'], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const cpu0 = process.cpuUsage();
  const result = await new Promise<LoadResult & { error?: string }>((resolve, reject) => {
    child.once('message', (m) => resolve(m as LoadResult));
    child.once('exit', (code) => (code ? reject(new Error(`load process exited with ${code}`)) : undefined));
    child.send({
      url: cp.url,
      ca: cp.caCert,
      cert: credentials.cert,
      key: credentials.key,
      pods,
      watchers,
      concurrency,
      resourceVersion: String(cp.store.revision),
    } satisfies LoadRequest);
  });
  const cpu = process.cpuUsage(cpu0);
  await cp.stop();
  if (result.error) throw new Error(result.error);
  const lat = [...result.latencies].sort((a, b) => a - b);
  return {
    perSecond: (pods / result.createsMs) * 1000,
    p50Ms: percentile(lat, 50),
    p99Ms: percentile(lat, 99),
    fanoutS: result.fanoutMs / 1000,
    eventsPerSecond: (pods * watchers) / (result.fanoutMs / 1000),
    maxLagMs: result.maxLagMs,
    complete: result.eventsPerWatcher.every((n) => n === pods),
    /** CPU time of the server process (user + system) per create, fan-out included. */
    cpuMsPerOp: (cpu.user + cpu.system) / 1000 / pods,
    errors: result.errors,
  };
}

/**
 * A second floor: an HTTPS server with the same certificates that reads each POST, parses it and answers
 * with it (201): what Node's TLS and HTTP cost for the same requests, with no API work.
 */
async function echo(dir: string, pods: number, concurrency: number) {
  const cp = new ControlPlane({
    dataDir: join(dir, 'echo-pki'),
    clock: new RealClock(),
    logger: createLogger({ level: 'warn' }),
    port: 0,
    controllers: { scheduler: false, endpointSlices: false },
  });
  await cp.start();
  const tls = { ca: cp.caCert, ...cp.adminCredentials };
  const pki = join(dir, 'echo-pki', 'pki');
  const { readFile } = await import('node:fs/promises');
  const serving = {
    cert: await readFile(join(pki, 'apiserver.crt'), 'utf8'),
    key: await readFile(join(pki, 'apiserver.key'), 'utf8'),
  };
  await cp.stop();
  const { createServer } = await import('node:https');
  const server = createServer(
    { ...serving, ca: tls.ca, requestCert: true, rejectUnauthorized: false },
    (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const obj = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify(obj));
      });
    },
  );
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as { port: number }).port;
  const child = fork(loadProcess, ['--load'], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const cpu0 = process.cpuUsage();
  const result = await new Promise<LoadResult>((resolve) => {
    child.once('message', (m) => resolve(m as LoadResult));
    child.send({
      url: `https://127.0.0.1:${port}`,
      ca: tls.ca,
      cert: tls.cert,
      key: tls.key,
      pods,
      watchers: 0,
      concurrency,
      resourceVersion: '0',
    } satisfies LoadRequest);
  });
  const cpu = process.cpuUsage(cpu0);
  server.closeAllConnections();
  server.close();
  const lat = [...result.latencies].sort((a, b) => a - b);
  return {
    perSecond: (pods / result.createsMs) * 1000,
    p50Ms: percentile(lat, 50),
    p99Ms: percentile(lat, 99),
    cpuMsPerOp: (cpu.user + cpu.system) / 1000 / pods,
  };
}

/**
 * `--authorization`: creates/s of a user bound to `edit` with the default chain (Node, RBAC) ÷ the same
 * with AlwaysAllow, in one run, alternating (on, off, on, off, …) so that the machine's drift falls on both.
 */
async function authorizationRatio(dir: string, pods: number, concurrency: number, rounds: number) {
  const on: number[] = [];
  const off: number[] = [];
  const cpuOn: number[] = [];
  const cpuOff: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const a = await api(dir, pods, 0, concurrency, { writer: true });
    const b = await api(dir, pods, 0, concurrency, { writer: true, modes: ['AlwaysAllow'] });
    if (a.errors.length || b.errors.length)
      throw new Error(`errors: ${[...a.errors, ...b.errors].join('; ')}`);
    on.push(a.perSecond);
    off.push(b.perSecond);
    cpuOn.push(a.cpuMsPerOp);
    cpuOff.push(b.cpuMsPerOp);
  }
  const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
  const result = {
    pods,
    concurrency,
    rounds,
    onPerSecond: median(on),
    offPerSecond: median(off),
    ratio: median(on) / median(off),
    cpuMsPerCreateOn: median(cpuOn),
    cpuMsPerCreateOff: median(cpuOff),
    runs: { on, off },
  };
  console.log(
    `pods ${pods} per run, concurrency ${concurrency}, ${rounds} rounds; ${cpus().length} CPUs, load ${loadavg()[0]!.toFixed(1)}`,
  );
  console.log('');
  console.log('| authorization | creates/s (median) | CPU ms per create | runs |');
  console.log('| --- | ---: | ---: | --- |');
  const fmt = (n: number, d = 0) =>
    n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });
  console.log(
    `| Node,RBAC (user bound to edit) | ${fmt(result.onPerSecond)} | ${fmt(result.cpuMsPerCreateOn, 3)} | ${on.map((x) => fmt(x)).join(', ')} |`,
  );
  console.log(
    `| AlwaysAllow (same user) | ${fmt(result.offPerSecond)} | ${fmt(result.cpuMsPerCreateOff, 3)} | ${off.map((x) => fmt(x)).join(', ')} |`,
  );
  console.log('');
  console.log(`ratio on ÷ off: ${result.ratio.toFixed(3)} (goal ≥ 0.9)`);
  return result;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      pods: { type: 'string', default: '10000' },
      watchers: { type: 'string', default: '100' },
      concurrency: { type: 'string', default: '32' },
      authorization: { type: 'boolean', default: false },
      rounds: { type: 'string', default: '3' },
      out: { type: 'string' },
    },
  });
  const pods = Number(values.pods);
  const watchers = Number(values.watchers);
  const concurrency = Number(values.concurrency);
  const dir = await mkdtemp(join(tmpdir(), 'nodelet-bench-api-'));
  if (values.authorization) {
    try {
      const result = await authorizationRatio(dir, pods, concurrency, Number(values.rounds));
      const out = values.out ?? join(benchDir, 'results', 'api-authorization.json');
      await mkdir(dirname(out), { recursive: true });
      await writeFile(out, `${JSON.stringify(result, null, 2)}\n`);
      console.log(`wrote ${out}`);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    return;
  }
  try {
    const f = floor(dir, pods);
    const r = await inProcess(dir, pods);
    const e = await echo(dir, pods, concurrency);
    const a = await api(dir, pods, watchers, concurrency);
    const fmt = (n: number, d = 0) =>
      n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });
    console.log(
      `pods ${pods}, watchers ${watchers}, concurrency ${concurrency}; ${cpus().length} CPUs, load ${loadavg()[0]!.toFixed(1)}`,
    );
    console.log('');
    console.log(
      '| path | creates/s | p50 ms | p99 ms | ratio to floor (creates/s) | CPU ms per create | ratio to floor (CPU) |',
    );
    console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: |');
    const row = (name: string, m: { perSecond: number; p50Ms?: number; p99Ms: number; cpuMsPerOp: number }) =>
      console.log(
        `| ${name} | ${fmt(m.perSecond)} | ${m.p50Ms === undefined ? '—' : fmt(m.p50Ms, 2)} | ${fmt(m.p99Ms, 2)} | ` +
          `${fmt(f.perSecond / m.perSecond, 1)}× | ${fmt(m.cpuMsPerOp, 3)} | ${fmt(m.cpuMsPerOp / f.cpuMsPerOp, 1)}× |`,
      );
    row('floor: raw better-sqlite3 insert', f);
    row('registry in-process (no HTTP)', r);
    row('HTTPS echo server (same requests, no API work)', e);
    row(`HTTPS API, ${watchers} watchers`, a);
    console.log('');
    console.log(
      `watch fan-out: ${watchers} watchers × ${pods} events = ${fmt(pods * watchers)} events in ${fmt(a.fanoutS, 2)} s ` +
        `(${fmt(a.eventsPerSecond)} events/s), max lag ${fmt(a.maxLagMs)} ms, every watcher complete: ${a.complete}`,
    );
    if (a.errors.length) console.log(`errors: ${a.errors.join('; ')}`);
    const out = values.out ?? join(benchDir, 'results', 'api.json');
    await mkdir(dirname(out), { recursive: true });
    await writeFile(
      out,
      JSON.stringify(
        {
          date: new Date().toISOString(),
          node: process.version,
          cpus: cpus().length,
          load: loadavg()[0],
          pods,
          watchers,
          concurrency,
          floor: f,
          registry: { ...r, ratio: f.perSecond / r.perSecond },
          httpsEcho: { ...e, ratio: f.perSecond / e.perSecond },
          api: { ...a, ratio: f.perSecond / a.perSecond },
        },
        null,
        2,
      ) + '\n',
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
