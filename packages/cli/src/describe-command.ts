import { request } from 'node:http';
import type { Pod } from '@nodelet/api';
import { parseFlags } from './args.js';
import { CliError } from './errors.js';
import { DEFAULT_SERVER, fetchPods } from './get-command.js';
import { type DescribedEvent, describePod } from './pod-describer.js';
import { sortPods } from './pod-printer.js';

export const describeHelp = `Show details of pods a running kubelet reports, as kubectl describe pod does: containers
with their state, probes and restarts, conditions, volumes, and the pod's last events (probe failures
and the kills they caused).

Usage:
  nodelet describe pod [NAME...] [flags]

Flags:
  -n, --namespace NS         the pods' namespace (default "default")
      --server URL           the kubelet's read-only endpoint (default ${DEFAULT_SERVER})
  -h, --help                 show this help

Without NAME, every pod of the namespace is described. Events come from the kubelet's
/pods/<namespace>/<name>/events (nodelet's read-only port serves the last 20 per pod).
`;

const options = {
  namespace: { type: 'string', short: 'n' },
  server: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

const podResources = new Set(['pods', 'pod', 'po']);

export interface DescribeIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  now?: () => number;
}

/** The pod's events from the kubelet; none when it has no such endpoint or cannot answer. */
export async function fetchPodEvents(
  server: string,
  namespace: string,
  name: string,
  timeoutMs = 5000,
): Promise<DescribedEvent[]> {
  const url = `${server.replace(/\/+$/, '')}/pods/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}/events`;
  const body = await new Promise<string | undefined>((resolve) => {
    const req = request(
      url,
      { agent: false, timeout: timeoutMs, headers: { accept: 'application/json' } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve(res.statusCode === 200 ? Buffer.concat(chunks).toString('utf8') : undefined),
        );
        res.on('error', () => resolve(undefined));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve(undefined));
    req.end();
  });
  if (body === undefined) return [];
  try {
    const list = JSON.parse(body) as { items?: DescribedEvent[] };
    return Array.isArray(list.items) ? list.items : [];
  } catch {
    return [];
  }
}

/** `nodelet describe pod …`; returns the exit code. */
export async function runDescribe(args: readonly string[], io: DescribeIo): Promise<number> {
  const { values, positionals } = parseFlags(args, options, 'nodelet describe');
  if (values.help) {
    io.stdout(describeHelp);
    return 0;
  }
  const [resource, ...names] = positionals;
  if (resource === undefined) {
    throw new CliError('describe needs a resource type; nodelet knows "pod" (nodelet describe pod NAME)');
  }
  if (!podResources.has(resource.toLowerCase())) {
    throw new CliError(
      `the server doesn't have a resource type ${JSON.stringify(resource)}; nodelet describe knows "pod"`,
    );
  }
  const server = values.server ?? DEFAULT_SERVER;
  const namespace = values.namespace ?? 'default';
  const pods = sortPods(await fetchPods(server)).filter(
    (p) => (p.metadata?.namespace ?? 'default') === namespace,
  );
  const selected: Pod[] = [];
  const missing: string[] = [];
  if (names.length === 0) selected.push(...pods);
  for (const name of names) {
    const pod = pods.find((p) => p.metadata?.name === name);
    if (pod) selected.push(pod);
    else missing.push(name);
  }
  const now = io.now?.() ?? Date.now();
  const texts: string[] = [];
  for (const pod of selected) {
    const events = await fetchPodEvents(server, namespace, pod.metadata?.name ?? '');
    texts.push(describePod(pod, events, { now }));
  }
  if (texts.length > 0) io.stdout(texts.join('\n\n'));
  for (const name of missing) io.stderr(`Error from server (NotFound): pods "${name}" not found\n`);
  if (selected.length === 0 && names.length === 0)
    io.stderr(`No resources found in ${namespace} namespace.\n`);
  return missing.length > 0 ? 1 : 0;
}
