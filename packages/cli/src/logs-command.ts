import { request } from 'node:http';
import type { Pod } from '@nodelet/api';
import { intFlag, parseFlags } from './args.js';
import { CliError } from './errors.js';
import { DEFAULT_SERVER, fetchPods } from './get-command.js';

export const logsHelp = `Print the logs of a container in a pod, as kubectl logs does, from a running kubelet.

Usage:
  nodelet logs POD [-c CONTAINER] [flags]

Flags:
  -c, --container NAME       the container (default: the pod's kubectl.kubernetes.io/default-container,
                             else its only or first container)
  -p, --previous             the previous instance of the container (the one that last terminated)
  -f, --follow               keep printing what the container writes until it stops
      --tail N               only the last N lines
  -n, --namespace NS         the pod's namespace (default "default")
      --server URL           the kubelet's read-only endpoint (default ${DEFAULT_SERVER})
  -h, --help                 show this help

The kubelet serves /containerLogs/<namespace>/<pod>/<container> on its read-only port; it reads the
CRI log file <podLogsDir>/<namespace>_<pod>_<uid>/<container>/<restartCount>.log.
`;

const options = {
  container: { type: 'string', short: 'c' },
  previous: { type: 'boolean', short: 'p' },
  follow: { type: 'boolean', short: 'f' },
  tail: { type: 'string' },
  namespace: { type: 'string', short: 'n' },
  server: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

export interface LogsIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
}

const DEFAULT_CONTAINER_ANNOTATION = 'kubectl.kubernetes.io/default-container';

/** kubectl's choice of container when none is named; says so on stderr when the pod has several. */
export function defaultContainer(pod: Pod, io: Pick<LogsIo, 'stderr'>): string {
  const spec = pod.spec;
  const containers = spec?.containers ?? [];
  const annotated = pod.metadata?.annotations?.[DEFAULT_CONTAINER_ANNOTATION];
  if (annotated && containers.some((c) => c.name === annotated)) return annotated;
  const first = containers[0]?.name;
  if (!first) throw new CliError(`pod "${pod.metadata?.name}" has no containers`);
  const all = [
    ...containers.map((c) => c.name),
    ...(spec?.initContainers ?? []).map((c) => `${c.name} (init)`),
  ];
  if (all.length > 1) io.stderr(`Defaulted container "${first}" out of: ${all.join(', ')}\n`);
  return first;
}

/** `nodelet logs …`; returns the exit code. */
export async function runLogs(args: readonly string[], io: LogsIo): Promise<number> {
  const { values, positionals } = parseFlags(args, options, 'nodelet logs');
  if (values.help) {
    io.stdout(logsHelp);
    return 0;
  }
  if (positionals.length === 0) throw new CliError('logs needs a pod name: nodelet logs POD [-c CONTAINER]');
  let [name, container] = positionals as [string, string | undefined, ...string[]];
  if (positionals.length > 2) {
    throw new CliError(`unexpected argument ${JSON.stringify(positionals[2])}; see nodelet logs --help`);
  }
  name = name.replace(/^(pods?|po)\//, '');
  if (values.container !== undefined && container !== undefined && values.container !== container) {
    throw new CliError(
      `container given twice: ${JSON.stringify(container)} and -c ${JSON.stringify(values.container)}`,
    );
  }
  container = values.container ?? container;
  const tail = intFlag('tail', values.tail, -1, Number.MAX_SAFE_INTEGER);
  const namespace = values.namespace ?? 'default';
  const server = values.server ?? DEFAULT_SERVER;

  if (container === undefined) {
    const pod = (await fetchPods(server)).find(
      (p) => p.metadata?.name === name && (p.metadata?.namespace ?? 'default') === namespace,
    );
    if (!pod) {
      io.stderr(`Error from server (NotFound): pods "${name}" not found\n`);
      return 1;
    }
    container = defaultContainer(pod, io);
  }

  const query = new URLSearchParams();
  if (values.previous) query.set('previous', 'true');
  if (values.follow) query.set('follow', 'true');
  if (tail !== undefined && tail >= 0) query.set('tailLines', String(tail));
  const url = `${server.replace(/\/+$/, '')}/containerLogs/${[namespace, name, container].map(encodeURIComponent).join('/')}${query.toString() ? `?${query}` : ''}`;
  const unreachable = () =>
    new CliError(
      `cannot reach the kubelet at ${server} (is "nodelet kubelet" running? its read-only port is set by --read-only-port)`,
    );
  return new Promise<number>((resolve, reject) => {
    // Without --follow the answer comes at once; with it, the stream lasts as long as the container runs.
    const timeout = values.follow ? undefined : 30_000;
    const req = request(url, { agent: false, timeout, headers: { accept: 'text/plain' } }, (res) => {
      res.setEncoding('utf8');
      const ok = res.statusCode === 200;
      let error = '';
      res.on('data', (chunk: string) => {
        if (ok) io.stdout(chunk);
        else error += chunk;
      });
      res.on('end', () => {
        if (ok) return resolve(0);
        const kind =
          res.statusCode === 404 ? 'NotFound' : res.statusCode === 400 ? 'BadRequest' : 'InternalError';
        io.stderr(`Error from server (${kind}): ${error.trim()}\n`);
        resolve(1);
      });
      res.on('error', () => reject(unreachable()));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => reject(unreachable()));
    req.end();
  });
}
