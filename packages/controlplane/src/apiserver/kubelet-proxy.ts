/**
 * The subresources the API server serves by asking a node's kubelet: `pods/log` (→ `/containerLogs`),
 * `nodes/proxy` (→ `/<path>`), and the upgraded streams `pods/exec`, `pods/attach`, `pods/portforward`
 * (→ `/exec`, `/attach`, `/portForward`), which are carried byte for byte once the kubelet has switched
 * protocols (SPDY or WebSocket alike).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { KubeObject } from '../object.js';
import { kubeletEndpoint, type KubeletClient, type KubeletEndpoint } from './kubelet-client.js';
import type { Registry } from './registry.js';
import { ApiError, badRequest, type StatusReason } from './status.js';

/** Hop-by-hop headers and the requester's own credentials never reach the kubelet. */
const dropped = new Set([
  'authorization',
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'host',
  'impersonate-user',
  'impersonate-group',
]);

function forwardHeaders(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) {
    if (v === undefined || dropped.has(k)) continue;
    out[k] = Array.isArray(v) ? v.join(', ') : v;
  }
  return out;
}

/** The kubelet endpoint of the node a pod runs on; 400 when it is not scheduled. */
export function podKubelet(registry: Registry, pod: KubeObject): KubeletEndpoint {
  const nodeName = pod.spec?.nodeName;
  if (!nodeName) throw badRequest(`pod ${pod.metadata.name} does not have a host assigned`);
  return nodeKubelet(registry, nodeName);
}

export function nodeKubelet(registry: Registry, nodeName: string): KubeletEndpoint {
  return kubeletEndpoint(registry.get(registry.byStorage('nodes'), '', nodeName));
}

/** Answers `res` with the kubelet's response (status, content type, body streamed as it comes). */
export async function relayResponse(
  kubelets: KubeletClient,
  endpoint: KubeletEndpoint,
  path: string,
  req: IncomingMessage,
  res: ServerResponse,
  check?: { resource: string; name: string },
): Promise<void> {
  const abort = new AbortController();
  res.on('close', () => abort.abort());
  const upstream = await kubelets.request(endpoint, path, {
    method: req.method ?? 'GET',
    headers: forwardHeaders(req),
    signal: abort.signal,
  });
  const status = upstream.statusCode ?? 502;
  if (check && (status < 200 || status > 206)) throw await kubeletError(upstream, status, check);
  const headers: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(upstream.headers)) {
    if (v !== undefined && !dropped.has(k)) headers[k] = v;
  }
  res.writeHead(upstream.statusCode ?? 502, headers);
  res.flushHeaders(); // a followed log may say nothing for a long time
  upstream.on('error', () => res.destroy());
  upstream.pipe(res);
  if (req.method !== 'GET' && req.method !== 'HEAD') req.resume();
}

/**
 * A kubelet's error answer as the API server's own Status (upstream's GenericHttpResponseChecker): a 400
 * or 500 carries the kubelet's text as its message ("previous terminated container … not found"), other
 * codes the generic message of their reason.
 */
async function kubeletError(
  upstream: IncomingMessage,
  status: number,
  what: { resource: string; name: string },
): Promise<ApiError> {
  let text = '';
  for await (const chunk of upstream) {
    text += (chunk as Buffer).toString('utf8');
    if (text.length >= 4096) break;
  }
  upstream.destroy();
  text = text.slice(0, 4096).trim();
  if (status === 400) return new ApiError(400, 'BadRequest', text);
  if (status === 500) return new ApiError(500, 'InternalError', `Internal error occurred: ${text}`);
  const [reason, message]: [StatusReason, string] =
    status === 401
      ? ['Unauthorized', 'the server has asked for the client to provide credentials']
      : status === 403
        ? ['Forbidden', 'the server does not allow access to the requested resource']
        : status === 404
          ? ['NotFound', 'the server could not find the requested resource']
          : ['InternalError', `an error on the server ("${text}") has prevented the request from succeeding`];
  return new ApiError(status, reason, `${message} (get ${what.resource} ${what.name})`);
}

/** `nodes/<name>/proxy/<path>` → the kubelet's `/<path>` with the same query and method. */
export async function proxyNode(
  registry: Registry,
  kubelets: KubeletClient | undefined,
  req: IncomingMessage,
  res: ServerResponse,
  nodeName: string,
  rest: string,
  search: string,
): Promise<void> {
  if (!kubelets) throw new ApiError(503, 'ServiceUnavailable', 'this API server has no kubelet client');
  const endpoint = nodeKubelet(registry, nodeName);
  await relayResponse(kubelets, endpoint, `/${rest}${search}`, req, res);
}

export type StreamSubresource = 'exec' | 'attach' | 'portforward';

/** The kubelet path of an upgraded pod stream, with the container checked as upstream does. */
export function streamPath(pod: KubeObject, subresource: StreamSubresource, q: URLSearchParams): string {
  const ns = encodeURIComponent(pod.metadata.namespace ?? 'default');
  const name = encodeURIComponent(pod.metadata.name ?? '');
  if (subresource === 'portforward') return `/portForward/${ns}/${name}${kubeletQuery(subresource, q)}`;
  if (pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed') {
    throw badRequest(
      `cannot ${subresource} into a container in a completed pod; current phase is ${pod.status.phase}`,
    );
  }
  const names = [
    ...((pod.spec?.containers ?? []) as { name: string }[]),
    ...((pod.spec?.initContainers ?? []) as { name: string }[]),
    ...((pod.spec?.ephemeralContainers ?? []) as { name: string }[]),
  ].map((c) => c.name);
  let container = q.get('container') ?? '';
  if (!container) {
    const regular = ((pod.spec?.containers ?? []) as { name: string }[]).map((c) => c.name);
    if (regular.length !== 1) {
      throw badRequest(
        `container: a container name must be specified for pod ${pod.metadata.name}, choose one of: [${regular.join(' ')}]`,
      );
    }
    container = regular[0]!;
  } else if (!names.includes(container)) {
    throw badRequest(`container: container ${container} is not valid for pod ${pod.metadata.name}`);
  }
  if (subresource === 'exec' && !q.getAll('command').length) {
    throw badRequest('command: you must specify at least 1 command');
  }
  const kubeletSub = subresource === 'exec' ? 'exec' : 'attach';
  return `/${kubeletSub}/${ns}/${name}/${encodeURIComponent(container)}${kubeletQuery(subresource, q)}`;
}

/**
 * The kubelet's query for a stream, as upstream's API server writes it (pkg/registry/core/pod
 * streamParams): `command` repeated and `input`/`output`/`error`/`tty`=1 for exec and attach, `port`
 * repeated for port-forward.
 */
function kubeletQuery(subresource: StreamSubresource, q: URLSearchParams): string {
  const out = new URLSearchParams();
  const on = (name: string) => /^(1|true)$/i.test(q.get(name) ?? '');
  if (subresource === 'portforward') {
    for (const p of q.getAll('ports').flatMap((v) => v.split(',')))
      if (p.trim()) out.append('port', p.trim());
  } else {
    for (const c of q.getAll('command')) out.append('command', c);
    if (on('stdin')) out.set('input', '1');
    if (on('stdout')) out.set('output', '1');
    if (on('stderr')) out.set('error', '1');
    if (on('tty')) out.set('tty', '1');
  }
  const text = out.toString();
  return text ? `?${text}` : '';
}

/**
 * Carries an upgrade request to the kubelet and, once it answers, the socket both ways unchanged. The
 * kubelet's answer (101 with the negotiated `X-Stream-Protocol-Version` / `Sec-WebSocket-Protocol`, or
 * an error) is relayed as it came.
 */
export async function proxyUpgrade(
  kubelets: KubeletClient,
  endpoint: KubeletEndpoint,
  path: string,
  req: IncomingMessage,
  client: Duplex,
  head: Buffer,
  /** Told the status code of the kubelet's answer (101 Switching Protocols, or its error). */
  onStatus?: (code: number) => void,
): Promise<void> {
  const upstream = await kubelets.connect(endpoint);
  if (onStatus) {
    upstream.once('data', (chunk: Buffer) => {
      const code = /^HTTP\/1\.[01] (\d{3})/.exec(chunk.subarray(0, 16).toString('latin1'))?.[1];
      if (code) onStatus(Number(code));
    });
  }
  const lines = [`${req.method ?? 'GET'} ${path} HTTP/1.1`, `Host: ${endpoint.host}:${endpoint.port}`];
  for (const [k, v] of Object.entries(req.headers)) {
    if (v === undefined || k === 'host' || k === 'authorization' || k.startsWith('impersonate-')) continue;
    for (const value of Array.isArray(v) ? v : [v]) lines.push(`${k}: ${value}`);
  }
  upstream.write(`${lines.join('\r\n')}\r\n\r\n`);
  if (head.length) upstream.write(head);
  const close = () => {
    client.destroy();
    upstream.destroy();
  };
  upstream.on('error', close);
  client.on('error', close);
  upstream.on('close', close);
  client.on('close', close);
  upstream.pipe(client);
  client.pipe(upstream);
}
