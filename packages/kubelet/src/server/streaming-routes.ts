/**
 * The kubelet's streaming endpoints (upstream pkg/kubelet/server: getExec, getAttach, getPortForward,
 * getRun): the pod and container are found by name, the runtime is asked for a streaming URL (CRI Exec,
 * Attach, PortForward), and the upgraded connection is carried to it — proxied byte for byte when the
 * client speaks SPDY, translated when it speaks WebSocket (kubectl 1.30+), upstream's default
 * (no redirect). `/run` runs a command to completion and answers its output.
 *
 * The query is the kubelet's, as the API server writes it: `command` (repeated), `input`, `output`,
 * `error`, `tty` ("1"); the API's names (`stdin`, `stdout`, `stderr`) are read too.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { RuntimeService } from '@nodelet/cri';
import { errorMessage, type Logger } from '@nodelet/kernel';
import {
  handleAttachUpgrade,
  handleExecUpgrade,
  handlePortForwardUpgrade,
  rejectUpgrade,
} from '@nodelet/streaming';
import type { Kubelet } from '../kubelet.js';
import { type RouteParams, type RouteTable, sendText } from './routes.js';

type Found<T> = T | { status: number; message: string };
const failed = <T>(f: Found<T>): f is { status: number; message: string } =>
  typeof (f as { status?: unknown }).status === 'number' &&
  typeof (f as { message?: unknown }).message === 'string';

/** `{ns}/{pod}/{container}` or `{ns}/{pod}/{uid}/{container}` after the endpoint's name. */
function podAndContainer(
  segments: string[],
): Found<{ namespace: string; pod: string; uid?: string; container: string }> {
  const rest = segments.slice(1);
  if (rest.length === 3) return { namespace: rest[0]!, pod: rest[1]!, container: rest[2]! };
  if (rest.length === 4) return { namespace: rest[0]!, pod: rest[1]!, uid: rest[2]!, container: rest[3]! };
  return { status: 404, message: `404 page not found: want /${segments[0]}/{namespace}/{pod}/{container}` };
}

/** The running container `container` of the pod, as upstream: "pod does not exist", "container not found". */
async function runningContainer(
  kubelet: Kubelet,
  where: { namespace: string; pod: string; uid?: string; container: string },
): Promise<Found<string>> {
  const pod = kubelet.getPod(where.namespace, where.pod);
  if (!pod || (where.uid && pod.metadata?.uid !== where.uid))
    return { status: 404, message: 'pod does not exist' };
  const status = await kubelet.kubeRuntime.getPodStatus(pod.metadata!.uid!, where.pod, where.namespace);
  const container = status.containers.find((c) => c.name === where.container && c.state === 'running');
  if (!container) return { status: 404, message: `container not found (${JSON.stringify(where.container)})` };
  return container.id;
}

async function readySandbox(
  kubelet: Kubelet,
  namespace: string,
  name: string,
  uid?: string,
): Promise<Found<string>> {
  const pod = kubelet.getPod(namespace, name);
  if (!pod || (uid && pod.metadata?.uid !== uid)) return { status: 404, message: 'pod does not exist' };
  const status = await kubelet.kubeRuntime.getPodStatus(pod.metadata!.uid!, name, namespace);
  const sandbox = status.sandboxes.find((s) => s.ready);
  if (!sandbox) return { status: 404, message: `pod ${namespace}/${name} has no running sandbox` };
  return sandbox.id;
}

const truthy = (v: string | null) => v !== null && /^(1|true)$/i.test(v);

/** The streams asked for, in the kubelet's names or the API's; the query rewritten in the API's for the protocol code. */
export function streamOptions(query: URLSearchParams): {
  command: string[];
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  tty: boolean;
  apiQuery: URLSearchParams;
} {
  const stdin = truthy(query.get('input')) || truthy(query.get('stdin'));
  const stdout = truthy(query.get('output')) || truthy(query.get('stdout'));
  const tty = truthy(query.get('tty'));
  // With a terminal, stderr is merged into stdout (upstream's stream options).
  const stderr = !tty && (truthy(query.get('error')) || truthy(query.get('stderr')));
  const command = query.getAll('command');
  const apiQuery = new URLSearchParams();
  for (const c of command) apiQuery.append('command', c);
  if (stdin) apiQuery.set('stdin', '1');
  if (stdout) apiQuery.set('stdout', '1');
  if (stderr) apiQuery.set('stderr', '1');
  if (tty) apiQuery.set('tty', '1');
  return { command, stdin, stdout, stderr, tty, apiQuery };
}

/** An upgraded request with the query the streaming code reads. */
function withQuery(req: IncomingMessage, path: string, query: URLSearchParams): IncomingMessage {
  req.url = `${path}?${query}`;
  return req;
}

export function installStreamingRoutes(
  routes: RouteTable,
  kubelet: Kubelet,
  runtime: RuntimeService,
  logger: Logger,
): void {
  const remoteCommand =
    (kind: 'exec' | 'attach') =>
    async (req: IncomingMessage, socket: Duplex, head: Buffer, params: RouteParams) => {
      const where = podAndContainer(params.segments);
      if (failed(where)) return rejectUpgrade(socket, where.status, where.message);
      const o = streamOptions(params.query);
      if (kind === 'exec' && o.command.length === 0)
        return rejectUpgrade(socket, 400, 'query parameter command is required');
      if (!o.stdin && !o.stdout && !o.stderr) {
        return rejectUpgrade(socket, 400, 'you must specify at least 1 of stdin, stdout, stderr');
      }
      const id = await runningContainer(kubelet, where);
      if (failed(id)) return rejectUpgrade(socket, id.status, id.message);
      let url: string;
      try {
        const streams = { stdin: o.stdin, stdout: o.stdout, stderr: o.stderr, tty: o.tty };
        url =
          kind === 'exec'
            ? (await runtime.exec({ containerId: id, cmd: o.command, ...streams })).url
            : (await runtime.attach({ containerId: id, ...streams })).url;
      } catch (err) {
        logger.debug(`${kind} refused by the runtime`, { container: id, err: errorMessage(err) });
        return rejectUpgrade(socket, 400, `${kind} in container ${where.container}: ${errorMessage(err)}`);
      }
      const upgrade = kind === 'exec' ? handleExecUpgrade : handleAttachUpgrade;
      upgrade(withQuery(req, `/${kind}`, o.apiQuery), socket, head, { url });
    };
  routes.addUpgradeRoute('/exec/', remoteCommand('exec'));
  routes.addUpgradeRoute('/attach/', remoteCommand('attach'));

  routes.addUpgradeRoute('/portForward/', async (req, socket, head, params) => {
    const rest = params.segments.slice(1);
    if (rest.length !== 2 && rest.length !== 3) {
      return rejectUpgrade(socket, 404, '404 page not found: want /portForward/{namespace}/{pod}');
    }
    const sandbox = await readySandbox(kubelet, rest[0]!, rest[1]!, rest[2]);
    if (failed(sandbox)) return rejectUpgrade(socket, sandbox.status, sandbox.message);
    // The kubelet's WebSocket form names its ports `port` (the API's `ports`).
    const query = new URLSearchParams();
    for (const p of [...params.query.getAll('port'), ...params.query.getAll('ports')])
      query.append('ports', p);
    let url: string;
    try {
      url = (await runtime.portForward({ podSandboxId: sandbox, port: [] })).url;
    } catch (err) {
      return rejectUpgrade(socket, 400, `port-forward to pod ${rest[1]}: ${errorMessage(err)}`);
    }
    handlePortForwardUpgrade(withQuery(req, '/portForward', query), socket, head, { url });
  });

  // Without an upgrade, the streaming endpoints answer as the runtime's streaming server would.
  for (const path of ['/exec/', '/attach/', '/portForward/']) {
    routes.addRoute({
      path,
      methods: ['GET', 'POST'],
      handler: (_req, res) => Promise.resolve(sendText(res, 400, 'Upgrade request required\n')),
    });
  }

  // POST /run/{ns}/{pod}/{container}?cmd=…: runs the command, answers its output (stdout then stderr).
  routes.addRoute({
    path: '/run/',
    methods: ['POST'],
    handler: async (_req, res, params) => {
      const where = podAndContainer(params.segments);
      if (failed(where)) return sendText(res, where.status, `${where.message}\n`);
      const cmd = (params.query.get('cmd') ?? '').split(/\s+/).filter((w) => w !== '');
      if (cmd.length === 0) return sendText(res, 400, 'query parameter cmd is required\n');
      const id = await runningContainer(kubelet, where);
      if (failed(id)) return sendText(res, id.status, `${id.message}\n`);
      try {
        const r = await runtime.execSync({ containerId: id, cmd, timeout: 0n });
        res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
        res.end(Buffer.concat([Buffer.from(r.stdout), Buffer.from(r.stderr)]));
      } catch (err) {
        sendText(res, 400, `run in container ${where.container}: ${errorMessage(err)}\n`);
      }
    },
  });
}
