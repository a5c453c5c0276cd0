import type { Pod } from '@nodelet/api';
import { intFlag, parseFlags } from './args.js';
import { CliError } from './errors.js';
import { type KubeletCredentials, kubeletGet, kubeletUrl, readCredentials } from './kubelet-client.js';

export const DEFAULT_API_SERVER = 'https://127.0.0.1:10250';

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
      --server URL           the kubelet API (default ${DEFAULT_API_SERVER})
      --client-certificate FILE, --client-key FILE
                             a client certificate the kubelet trusts (--client-ca-file), e.g. the
                             admin certificate of nodelet up (<data-dir>/pki/admin.crt and .key)
      --token TOKEN          a bearer token (checked by the kubelet with a TokenReview)
      --certificate-authority FILE
                             verify the kubelet's serving certificate (default: not verified, as it is
                             usually self-signed)
  -h, --help                 show this help

The kubelet serves /containerLogs/<namespace>/<pod>/<container> on its API port (--port, 10250), not
on the read-only port; it reads the CRI log file
<podLogsDir>/<namespace>_<pod>_<uid>/<container>/<restartCount>.log.
`;

const options = {
  container: { type: 'string', short: 'c' },
  previous: { type: 'boolean', short: 'p' },
  follow: { type: 'boolean', short: 'f' },
  tail: { type: 'string' },
  namespace: { type: 'string', short: 'n' },
  server: { type: 'string' },
  'client-certificate': { type: 'string' },
  'client-key': { type: 'string' },
  'certificate-authority': { type: 'string' },
  token: { type: 'string' },
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
  const server = values.server ?? DEFAULT_API_SERVER;
  const creds = readCredentials(values);
  const unreachable = () =>
    new CliError(
      `cannot reach the kubelet at ${server} (is "nodelet kubelet" running? its API port is set by --port)`,
    );

  if (container === undefined) {
    const pod = (await fetchApiPods(server, creds, unreachable)).find(
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
  const path = `/containerLogs/${[namespace, name, container].map(encodeURIComponent).join('/')}${query.toString() ? `?${query}` : ''}`;
  const url = kubeletUrl(server, path, DEFAULT_API_SERVER);
  return new Promise<number>((resolve, reject) => {
    // Without --follow the answer comes at once; with it, the stream lasts as long as the container runs.
    const timeoutMs = values.follow ? undefined : 30_000;
    kubeletGet(
      url,
      creds,
      { timeoutMs, accept: 'text/plain' },
      () => reject(unreachable()),
      (res) => {
        res.setEncoding('utf8');
        const ok = res.statusCode === 200;
        let error = '';
        res.on('data', (chunk: string) => {
          if (ok) io.stdout(chunk);
          else error += chunk;
        });
        res.on('end', () => {
          if (ok) return resolve(0);
          const kinds: Record<number, string> = {
            400: 'BadRequest',
            401: 'Unauthorized',
            403: 'Forbidden',
            404: 'NotFound',
          };
          const kind = kinds[res.statusCode ?? 0] ?? 'InternalError';
          io.stderr(`Error from server (${kind}): ${error.trim()}\n`);
          resolve(1);
        });
        res.on('error', () => reject(unreachable()));
      },
    );
  });
}

/** The kubelet API's `/pods`, to choose the default container. */
function fetchApiPods(
  server: string,
  creds: KubeletCredentials,
  unreachable: () => CliError,
): Promise<Pod[]> {
  const url = kubeletUrl(server, '/pods', DEFAULT_API_SERVER);
  return new Promise((resolve, reject) => {
    kubeletGet(
      url,
      creds,
      { timeoutMs: 5000, accept: 'application/json' },
      () => reject(unreachable()),
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('error', () => reject(unreachable()));
        res.on('end', () => {
          if (res.statusCode !== 200) {
            return reject(
              new CliError(`the kubelet at ${server} answered /pods with ${res.statusCode}: ${body.trim()}`),
            );
          }
          try {
            resolve((JSON.parse(body) as { items?: Pod[] }).items ?? []);
          } catch {
            reject(
              new CliError(`the kubelet at ${server} answered /pods with something that is not a PodList`),
            );
          }
        });
      },
    );
  });
}
