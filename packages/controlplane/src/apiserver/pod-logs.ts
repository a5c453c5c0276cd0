/** `pods/log`: which container, then the log stream of the kubelet that runs the pod. */
import type { ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import type { KubeObject } from '../object.js';
import { boolParam, intParam, optional } from './request-params.js';
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
}

/**
 * Serves `pods/log` for the pods of one node. The kubelet of a node implements it and registers it with
 * the control plane (in-process for `nodelet up`); until then the endpoint answers 501.
 */
export interface PodLogProvider {
  logs(pod: KubeObject, options: PodLogOptions, signal: AbortSignal): Promise<Readable | string>;
}

export async function servePodLogs(
  ctx: ServeContext,
  res: ServerResponse,
  namespace: string,
  name: string,
  q: URLSearchParams,
): Promise<void> {
  const { registry } = ctx;
  const pods = registry.byStorage('pods');
  const pod = registry.get(pods, namespace, name);
  const containers: string[] = (pod.spec?.containers ?? []).map((c: { name: string }) => c.name);
  const all = [...containers, ...(pod.spec?.initContainers ?? []).map((c: { name: string }) => c.name)];
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
  const node = pod.spec?.nodeName;
  if (!node) throw badRequest(`pod ${name} does not have a host assigned`);
  const provider = ctx.logProviders.get(node);
  if (!provider) {
    throw notImplemented(
      `logs of pod ${namespace}/${name} are served by the kubelet of node ${node}, and no kubelet on this control plane serves logs for that node`,
    );
  }
  const abort = new AbortController();
  res.on('close', () => abort.abort());
  const options: PodLogOptions = {
    container,
    follow: boolParam(q, 'follow'),
    previous: boolParam(q, 'previous'),
    timestamps: boolParam(q, 'timestamps'),
    ...optional('tailLines', intParam(q, 'tailLines')),
    ...optional('sinceSeconds', intParam(q, 'sinceSeconds')),
    ...optional('limitBytes', intParam(q, 'limitBytes')),
  };
  const out = await provider.logs(pod, options, abort.signal);
  res.writeHead(200, { 'content-type': 'text/plain' });
  if (typeof out === 'string') {
    res.end(out);
    return;
  }
  out.on('error', () => res.destroy());
  out.pipe(res);
}
