import { request } from 'node:http';
import type { Pod, PodList } from '@nodelet/api';
import { parseFlags } from './args.js';
import { CliError } from './errors.js';
import { printPodTable, sortKeys, sortPods } from './pod-printer.js';

export const DEFAULT_SERVER = 'http://127.0.0.1:10255';

export const getHelp = `List the pods a running kubelet reports, as kubectl get pods does.

Usage:
  nodelet get pods [NAME...] [flags]

Flags:
  -o, --output FORMAT        wide | json | yaml | name (default: a table)
  -n, --namespace NS         only pods of this namespace (default "default")
  -A, --all-namespaces       pods of every namespace, with a NAMESPACE column
      --no-headers           no header row
      --server URL           the kubelet's read-only endpoint (default ${DEFAULT_SERVER})
  -h, --help                 show this help

The kubelet serves /pods on its read-only port (nodelet kubelet --read-only-port, default 10255).
`;

const options = {
  output: { type: 'string', short: 'o' },
  namespace: { type: 'string', short: 'n' },
  'all-namespaces': { type: 'boolean', short: 'A' },
  'no-headers': { type: 'boolean' },
  server: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

const podResources = new Set(['pods', 'pod', 'po']);
const outputs = ['wide', 'json', 'yaml', 'name'] as const;
type Output = (typeof outputs)[number] | 'table';

export interface GetIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  now?: () => number;
}

/** Reads the kubelet's `/pods`. Unreachable → one CliError naming the URL and how to fix it. */
export async function fetchPods(server: string, timeoutMs = 5000): Promise<Pod[]> {
  const base = server.replace(/\/+$/, '');
  const unreachable = () =>
    new CliError(
      `cannot reach the kubelet at ${server} (is "nodelet kubelet" running? its read-only port is set by --read-only-port)`,
    );
  let url: URL;
  try {
    url = new URL(`${base}/pods`);
  } catch {
    throw new CliError(`--server ${JSON.stringify(server)} is not a URL; write it like ${DEFAULT_SERVER}`);
  }
  if (url.protocol !== 'http:') {
    throw new CliError(
      `--server ${JSON.stringify(server)}: only http:// is supported (the kubelet's read-only port)`,
    );
  }
  const { status, body } = await new Promise<{ status: number; body: string }>((resolvePromise, reject) => {
    const req = request(
      url,
      { method: 'GET', agent: false, timeout: timeoutMs, headers: { accept: 'application/json' } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolvePromise({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }),
        );
        res.on('error', () => reject(unreachable()));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => reject(unreachable()));
    req.end();
  });
  if (status !== 200) {
    throw new CliError(
      `the kubelet at ${server} answered GET /pods with HTTP ${status}: ${body.trim().split('\n')[0]}`,
    );
  }
  let list: PodList;
  try {
    list = JSON.parse(body) as PodList;
  } catch {
    throw new CliError(`the kubelet at ${server} answered GET /pods with something that is not JSON`);
  }
  if (!list || !Array.isArray(list.items)) {
    throw new CliError(`the kubelet at ${server} answered GET /pods with something that is not a PodList`);
  }
  return list.items;
}

/** `nodelet get pods …`; returns the exit code. */
export async function runGet(args: readonly string[], io: GetIo): Promise<number> {
  const { values, positionals } = parseFlags(args, options, 'nodelet get');
  if (values.help) {
    io.stdout(getHelp);
    return 0;
  }
  const [resource, ...names] = positionals;
  if (resource === undefined) {
    throw new CliError('get needs a resource type; nodelet knows "pods" (nodelet get pods)');
  }
  if (!podResources.has(resource.toLowerCase())) {
    throw new CliError(
      `the server doesn't have a resource type ${JSON.stringify(resource)}; nodelet get knows "pods"`,
    );
  }
  const output: Output = values.output === undefined ? 'table' : (values.output as Output);
  if (output !== 'table' && !outputs.includes(output)) {
    throw new CliError(
      `unable to match a printer suitable for the output format ${JSON.stringify(values.output)}, allowed formats are: ${outputs.join(',')}`,
    );
  }
  const all = !!values['all-namespaces'];
  const namespace = values.namespace ?? 'default';
  if (all && names.length > 0) {
    throw new CliError('a resource cannot be retrieved by name across all namespaces');
  }

  const pods = sortPods(await fetchPods(values.server ?? DEFAULT_SERVER));
  let selected = pods.filter((p) => all || (p.metadata?.namespace ?? 'default') === namespace);
  const missing: string[] = [];
  if (names.length > 0) {
    selected = [];
    for (const name of names) {
      const pod = pods.find(
        (p) => p.metadata?.name === name && (p.metadata?.namespace ?? 'default') === namespace,
      );
      if (pod) selected.push(pod);
      else missing.push(name);
    }
  }

  const now = io.now?.() ?? Date.now();
  const printable = selected.map((p) => ({ apiVersion: 'v1', kind: 'Pod', ...p }));
  switch (output) {
    case 'json':
    case 'yaml': {
      if (selected.length === 0 && names.length > 0) break;
      const doc =
        names.length === 1 && printable.length === 1
          ? printable[0]
          : { apiVersion: 'v1', items: printable, kind: 'List', metadata: { resourceVersion: '' } };
      if (output === 'json') io.stdout(JSON.stringify(sortKeys(doc), null, 4) + '\n');
      else {
        const { stringify } = await import('yaml');
        io.stdout(stringify(sortKeys(doc), { indentSeq: false, lineWidth: 0 }));
      }
      break;
    }
    case 'name':
      for (const p of selected) io.stdout(`pod/${p.metadata?.name ?? ''}\n`);
      break;
    default:
      if (selected.length > 0) {
        io.stdout(
          printPodTable(selected, {
            wide: output === 'wide',
            withNamespace: all,
            noHeaders: !!values['no-headers'],
            now,
          }),
        );
      }
  }
  for (const name of missing) io.stderr(`Error from server (NotFound): pods "${name}" not found\n`);
  if (selected.length === 0 && names.length === 0 && output !== 'json' && output !== 'yaml') {
    io.stderr(all ? 'No resources found\n' : `No resources found in ${namespace} namespace.\n`);
  }
  return missing.length > 0 ? 1 : 0;
}
