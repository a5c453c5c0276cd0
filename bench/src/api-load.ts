/**
 * The load process of bench/src/api.ts (a child, so that its TLS and JSON work is not the server's): it
 * opens the watch streams, then POSTs the pods with a bounded number in flight, and reports latencies,
 * fan-out and errors to its parent.
 */
import { Agent, request } from 'node:https';

export function podBody(i: number) {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `bench-${String(i).padStart(6, '0')}`,
      labels: { app: 'bench', shard: String(i % 16) },
    },
    spec: {
      containers: [
        {
          name: 'app',
          image: 'registry.local/bench/app:1.0',
          ports: [{ name: 'http', containerPort: 8080 }],
          resources: { requests: { cpu: '10m', memory: '16Mi' } },
          env: [{ name: 'INDEX', value: String(i) }],
        },
      ],
    },
  };
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

// ----- the load process ---------------------------------------------------------------------------------

export interface LoadRequest {
  url: string;
  ca: string;
  cert: string;
  key: string;
  pods: number;
  watchers: number;
  concurrency: number;
  resourceVersion: string;
}

export interface LoadResult {
  createsMs: number;
  latencies: number[];
  fanoutMs: number;
  maxLagMs: number;
  eventsPerWatcher: number[];
  errors: string[];
}

async function load(req: LoadRequest): Promise<LoadResult> {
  const agent = new Agent({
    keepAlive: true,
    maxSockets: req.concurrency,
    ca: req.ca,
    cert: req.cert,
    key: req.key,
  });
  const errors: string[] = [];
  const counts = new Array<number>(req.watchers).fill(0);
  const lastEventAt = new Array<number>(req.watchers).fill(0);
  const createdAt = new Map<string, number>();
  let maxLag = 0;
  let allDone!: () => void;
  const allReceived = new Promise<void>((r) => (allDone = r));
  let complete = 0;
  const streams: ReturnType<typeof request>[] = [];
  // Watchers first: each one sees every create.
  await Promise.all(
    Array.from(
      { length: req.watchers },
      (_, w) =>
        new Promise<void>((opened, failed) => {
          const r = request(
            new URL(
              `/api/v1/namespaces/bench/pods?watch=true&resourceVersion=${req.resourceVersion}`,
              req.url,
            ),
            { agent: new Agent({ keepAlive: false, ca: req.ca, cert: req.cert, key: req.key }) },
            (res) => {
              opened();
              let buf = '';
              res.on('data', (chunk: Buffer) => {
                buf += chunk.toString('utf8');
                let i: number;
                while ((i = buf.indexOf('\n')) >= 0) {
                  const line = buf.slice(0, i);
                  buf = buf.slice(i + 1);
                  if (!line.startsWith('{"type":"ADDED"')) continue;
                  const now = performance.now();
                  counts[w]!++;
                  lastEventAt[w] = now;
                  const name = /"name":"(bench-\d+)"/.exec(line)?.[1];
                  const sent = name ? createdAt.get(name) : undefined;
                  if (sent !== undefined && now - sent > maxLag) maxLag = now - sent;
                  if (counts[w] === req.pods && ++complete === req.watchers) allDone();
                }
              });
            },
          );
          r.on('error', (e) => {
            errors.push(`watch ${w}: ${e.message}`);
            failed(e);
          });
          r.end();
          streams.push(r);
        }),
    ),
  );
  const latencies: number[] = [];
  const start = performance.now();
  let next = 0;
  const worker = async () => {
    for (;;) {
      const i = next++;
      if (i >= req.pods) return;
      const body = Buffer.from(JSON.stringify(podBody(i)));
      const t0 = performance.now();
      createdAt.set(podBody(i).metadata.name, t0);
      const status = await new Promise<number>((resolve) => {
        const r = request(
          new URL('/api/v1/namespaces/bench/pods', req.url),
          {
            method: 'POST',
            agent,
            headers: {
              'content-type': 'application/json',
              'content-length': body.length,
              accept: 'application/json',
            },
          },
          (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode ?? 0));
          },
        );
        r.on('error', (e) => {
          errors.push(e.message);
          resolve(0);
        });
        r.end(body);
      });
      latencies.push(performance.now() - t0);
      if (status !== 201) errors.push(`create ${i}: HTTP ${status}`);
    }
  };
  await Promise.all(Array.from({ length: req.concurrency }, worker));
  const createsMs = performance.now() - start;
  if (req.watchers === 0) allDone(); // nobody to wait for
  const deadline = setTimeout(() => allDone(), 120_000);
  await allReceived;
  clearTimeout(deadline);
  const fanoutMs = Math.max(...lastEventAt) - start;
  for (const s of streams) s.destroy();
  agent.destroy();
  return {
    createsMs,
    latencies,
    fanoutMs,
    maxLagMs: maxLag,
    eventsPerWatcher: counts,
    errors: errors.slice(0, 10),
  };
}

if (process.argv[2] === '--load') {
  process.once('message', (msg) => {
    void load(msg as LoadRequest).then(
      (result) => process.send!(result, () => process.exit(0)),
      (err) => process.send!({ error: String(err) }, () => process.exit(1)),
    );
  });
}
