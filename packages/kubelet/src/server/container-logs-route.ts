import type { IncomingMessage, ServerResponse } from 'node:http';
import { errorMessage, type Logger } from '@nodelet/kernel';
import { findContainerLog, followContainerLog, readContainerLog } from '../container-logs.js';
import type { Kubelet } from '../kubelet.js';
import { LogRenderer, parseLogOptions } from './log-options.js';
import { type RouteParams, sendText } from './routes.js';

/**
 * `/containerLogs/{namespace}/{pod}/{container}` (upstream getContainerLogs): the container's log as
 * `kubectl logs` shows it, with follow, previous, tailLines, limitBytes, sinceSeconds, sinceTime and
 * timestamps. A bad query value is a 400 naming its parameter.
 */
export function containerLogsHandler(kubelet: Kubelet, logger: Logger) {
  return async (
    req: IncomingMessage,
    res: ServerResponse,
    { segments, query }: RouteParams,
  ): Promise<void> => {
    const parts = segments.slice(1);
    if (parts.length !== 3 || parts.some((p) => !p)) {
      return sendText(res, 400, 'want /containerLogs/<namespace>/<pod>/<container>\n');
    }
    const [namespace, pod, container] = parts as [string, string, string];
    const options = parseLogOptions(query, kubelet.clock.now());
    if ('error' in options) return sendText(res, 400, `${options.error}\n`);
    const target = await findContainerLog(kubelet, namespace, pod, container, options.previous);
    if (!target.found) return sendText(res, target.status, `${target.message}\n`);
    let read: { text: string; offset: number };
    try {
      read = await readContainerLog(target.path, true);
    } catch (err) {
      return sendText(
        res,
        400,
        `failed to read the log of container "${container}" in pod "${pod}": ${errorMessage(err)}\n`,
      );
    }
    const renderer = new LogRenderer(options);
    res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
    res.write(renderer.first(read.text));
    if (!options.follow || options.previous || renderer.exhausted) {
      res.end(renderer.end());
      return;
    }
    const abort = new AbortController();
    req.once('close', () => abort.abort());
    res.once('close', () => abort.abort());
    const isRunning = async () =>
      (await kubelet.kubeRuntime.getPodStatus(target.uid, pod, namespace)).containers.some(
        (c) => c.id === target.containerId && c.state === 'running',
      );
    const write = (text: string) => {
      if (text) res.write(text);
      if (renderer.exhausted) abort.abort();
    };
    try {
      await followContainerLog(target.path, read.offset, write, isRunning, abort.signal, {
        clock: kubelet.clock,
        decode: (chunk) => renderer.push(chunk),
      });
    } catch (err) {
      logger.warn('following container logs failed', {
        pod: `${namespace}/${pod}`,
        container,
        err: errorMessage(err),
      });
    }
    res.end(renderer.end());
  };
}
