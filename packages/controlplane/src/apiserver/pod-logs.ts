/** `pods/log`: which container, then the log stream of the kubelet that runs the pod. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import type { KubeObject } from '../object.js';
import { boolParam, intParam, optional } from './request-params.js';
import { podKubelet, relayResponse } from './kubelet-proxy.js';
import type { ServeContext } from './resource-handler.js';
import { badRequest, notImplemented } from './status.js';

export interface PodLogOptions {
  container: string;
  follow: boolean;
  previous: boolean;
  timestamps: boolean;
  tailLines?: number;
  sinceSeconds?: number;
  limitBytes?: number;
  sinceTime?: string;
}

/**
 * Serves `pods/log` for the pods of one node in-process (a kubelet inside this process may register
 * one). Every other node is asked over HTTPS at its published kubelet endpoint.
 */
export interface PodLogProvider {
  logs(pod: KubeObject, options: PodLogOptions, signal: AbortSignal): Promise<Readable | string>;
}

/** The log options of a request, each checked as upstream's PodLogOptions validation does. */
export function podLogOptions(q: URLSearchParams, container: string): PodLogOptions {
  const tailLines = intParam(q, 'tailLines');
  if (tailLines !== undefined && tailLines < 0)
    throw badRequest(`tailLines: Invalid value: ${tailLines}: must be greater than or equal to 0`);
  const limitBytes = intParam(q, 'limitBytes');
  if (limitBytes !== undefined && limitBytes < 1)
    throw badRequest(`limitBytes: Invalid value: ${limitBytes}: must be greater than 0`);
  const sinceSeconds = intParam(q, 'sinceSeconds');
  if (sinceSeconds !== undefined && sinceSeconds < 1)
    throw badRequest(`sinceSeconds: Invalid value: ${sinceSeconds}: must be greater than 0`);
  const sinceTime = q.get('sinceTime') || undefined;
  if (sinceTime !== undefined && Number.isNaN(Date.parse(sinceTime)))
    throw badRequest(`sinceTime: Invalid value: "${sinceTime}": must be an RFC3339 time`);
  if (sinceTime !== undefined && sinceSeconds !== undefined)
    throw badRequest(
      'sinceSeconds: Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified',
    );
  for (const flag of ['follow', 'previous', 'timestamps']) {
    const v = q.get(flag);
    if (v !== null && !['', 'true', 'false', '1', '0', 'True', 'False'].includes(v))
      throw badRequest(`${flag}: Invalid value: "${v}": must be a boolean`);
  }
  return {
    container,
    follow: boolParam(q, 'follow'),
    previous: boolParam(q, 'previous'),
    timestamps: boolParam(q, 'timestamps'),
    ...optional('tailLines', tailLines),
    ...optional('sinceSeconds', sinceSeconds),
    ...optional('limitBytes', limitBytes),
    ...(sinceTime !== undefined ? { sinceTime } : {}),
  };
}

/** The kubelet's `/containerLogs` path and query for `options`. */
export function containerLogsPath(pod: KubeObject, options: PodLogOptions): string {
  const q = new URLSearchParams();
  if (options.follow) q.set('follow', 'true');
  if (options.previous) q.set('previous', 'true');
  if (options.timestamps) q.set('timestamps', 'true');
  if (options.tailLines !== undefined) q.set('tailLines', String(options.tailLines));
  if (options.limitBytes !== undefined) q.set('limitBytes', String(options.limitBytes));
  if (options.sinceSeconds !== undefined) q.set('sinceSeconds', String(options.sinceSeconds));
  if (options.sinceTime !== undefined) q.set('sinceTime', options.sinceTime);
  const query = q.toString();
  const e = encodeURIComponent;
  return `/containerLogs/${e(pod.metadata.namespace ?? 'default')}/${e(pod.metadata.name ?? '')}/${e(options.container)}${query ? `?${query}` : ''}`;
}

export async function servePodLogs(
  ctx: ServeContext,
  req: IncomingMessage,
  res: ServerResponse,
  namespace: string,
  name: string,
  q: URLSearchParams,
): Promise<void> {
  const { registry } = ctx;
  const pods = registry.byStorage('pods');
  const pod = registry.get(pods, namespace, name);
  const containers: string[] = (pod.spec?.containers ?? []).map((c: { name: string }) => c.name);
  const all = [
    ...containers,
    ...[...(pod.spec?.initContainers ?? []), ...(pod.spec?.ephemeralContainers ?? [])].map(
      (c: { name: string }) => c.name,
    ),
  ];
  let container = q.get('container') ?? '';
  if (!container) {
    if (containers.length !== 1) {
      throw badRequest(
        `a container name must be specified for pod ${name}, choose one of: [${containers.join(' ')}]`,
      );
    }
    container = containers[0]!;
  } else if (!all.includes(container)) {
    throw badRequest(`container ${container} is not valid for pod ${name}`);
  }
  const options = podLogOptions(q, container);
  const node = pod.spec?.nodeName;
  if (!node) throw badRequest(`pod ${name} does not have a host assigned`);
  const provider = ctx.logProviders.get(node);
  if (!provider) {
    if (!ctx.kubelets) {
      throw notImplemented(
        `logs of pod ${namespace}/${name} are served by the kubelet of node ${node}, and this API server has no kubelet client`,
      );
    }
    const endpoint = podKubelet(registry, pod);
    return relayResponse(ctx.kubelets, endpoint, containerLogsPath(pod, options), req, res, {
      resource: 'pods',
      name,
    });
  }
  const abort = new AbortController();
  res.on('close', () => abort.abort());
  const out = await provider.logs(pod, options, abort.signal);
  res.writeHead(200, { 'content-type': 'text/plain' });
  if (typeof out === 'string') {
    res.end(out);
    return;
  }
  out.on('error', () => res.destroy());
  out.pipe(res);
}
