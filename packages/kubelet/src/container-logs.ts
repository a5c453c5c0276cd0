import { open, readFile } from 'node:fs/promises';
import { StringDecoder } from 'node:string_decoder';
import type { ContainerStatus, Pod } from '@nodelet/api';
import { containerLogPath, parseCriLogLine, podLogsDirectory } from '@nodelet/cri';
import type { Clock } from '@nodelet/kernel';
import type { Kubelet } from './kubelet.js';

/**
 * Container logs as `kubectl logs` shows them (upstream kubelet's `/containerLogs/{ns}/{pod}/{container}`):
 * which container's file to read — the current instance, or with `previous` the last terminated one —
 * and the CRI log format (`<time> <stream> <P|F> <content>`) turned back into what the container wrote.
 *
 *   current:   running → it;  terminated → it;  waiting after a crash → the last terminated one;
 *              waiting without one → "is waiting to start: <reason>"
 *   previous:  lastState.terminated → it;  none → "previous terminated container … not found"
 */

/**
 * Decodes CRI log text chunk by chunk: each `F` line gives its content and a newline, each `P` line its
 * content alone, so a line the runtime split (`P`, `P`, …, `F`) comes out joined. A trailing piece
 * without its newline (a write in progress) waits for the next chunk; malformed lines are skipped.
 */
export class CriLogDecoder {
  private rest = '';

  push(chunk: string): string {
    const text = this.rest + chunk;
    const end = text.lastIndexOf('\n');
    if (end < 0) {
      this.rest = text;
      return '';
    }
    this.rest = text.slice(end + 1);
    let out = '';
    for (const line of text.slice(0, end).split('\n')) {
      if (!line) continue;
      try {
        const { partial, content } = parseCriLogLine(line);
        out += partial ? content : `${content}\n`;
      } catch {
        // Not a CRI log line (a truncated write, a foreign file): skipped, as upstream's reader does.
      }
    }
    return out;
  }
}

/** The whole of a CRI log file's text, decoded. */
export function decodeCriLog(text: string): string {
  return new CriLogDecoder().push(text.endsWith('\n') ? text : `${text}\n`);
}

/** The last `n` lines of decoded text (all of it when `n` is undefined). */
export function tailLines(text: string, n: number | undefined): string {
  if (n === undefined) return text;
  if (n <= 0) return '';
  let at = text.length - (text.endsWith('\n') ? 1 : 0);
  for (let i = 0; i < n; i++) {
    at = text.lastIndexOf('\n', at - 1);
    if (at < 0) return text;
  }
  return text.slice(at + 1);
}

export type LogTarget =
  | { found: true; path: string; containerId: string; uid: string }
  | { found: false; status: 400 | 404; message: string };

const stripRuntime = (id: string | undefined) => (id ?? '').replace(/^[a-z0-9.+-]+:\/\//i, '');

/** Upstream validateContainerLogStatus: the container id whose log to read, or why there is none. */
export function logContainerId(
  podName: string,
  container: string,
  status: ContainerStatus | undefined,
  previous: boolean,
): { id: string } | { error: string } {
  const where = `container "${container}" in pod "${podName}"`;
  if (!status) return { error: `${where} is not available` };
  const last = stripRuntime(status.lastState?.terminated?.containerID);
  if (previous) {
    return last ? { id: last } : { error: `previous terminated ${where} not found` };
  }
  const state = status.state ?? {};
  if (state.running) return { id: stripRuntime(status.containerID) };
  if (state.terminated) {
    const id = stripRuntime(state.terminated.containerID) || stripRuntime(status.containerID) || last;
    return id ? { id } : { error: `${where} is terminated` };
  }
  if (last) return { id: last };
  const reason = state.waiting?.reason;
  switch (reason) {
    case undefined:
      return { error: `${where} is not available` };
    case 'ErrImagePull':
      return { error: `${where} is waiting to start: image can't be pulled` };
    case 'ImagePullBackOff':
      return { error: `${where} is waiting to start: trying and failing to pull image` };
    default:
      return { error: `${where} is waiting to start: ${reason}` };
  }
}

/** Finds the log file of a pod's container: `<podLogsDir>/<ns>_<name>_<uid>/<container>/<restartCount>.log`. */
export async function findContainerLog(
  kubelet: Kubelet,
  namespace: string,
  podName: string,
  container: string,
  previous: boolean,
): Promise<LogTarget> {
  const pod: Pod | undefined = kubelet.getPod(namespace, podName);
  if (!pod) return { found: false, status: 404, message: `pods "${podName}" not found` };
  const spec = pod.spec;
  const names = [
    ...(spec?.initContainers ?? []),
    ...(spec?.containers ?? []),
    ...((spec?.ephemeralContainers as { name: string }[] | undefined) ?? []),
  ].map((c) => c.name);
  if (!names.includes(container)) {
    return {
      found: false,
      status: 404,
      message: `container "${container}" not found in pod "${podName}"; its containers are: ${names.join(', ')}`,
    };
  }
  const st = pod.status;
  const status = [
    ...(st?.initContainerStatuses ?? []),
    ...(st?.containerStatuses ?? []),
    ...(st?.ephemeralContainerStatuses ?? []),
  ].find((c) => c.name === container);
  const chosen = logContainerId(podName, container, status, previous);
  if ('error' in chosen) return { found: false, status: 400, message: chosen.error };
  const uid = pod.metadata!.uid!;
  const runtime = await kubelet.kubeRuntime.getPodStatus(uid, podName, namespace);
  const instance = runtime.containers.find((c) => c.id === chosen.id);
  if (!instance) {
    return {
      found: false,
      status: 400,
      message: `container "${container}" in pod "${podName}": its container ${chosen.id.slice(0, 13)} is no longer in the runtime`,
    };
  }
  const path = `${podLogsDirectory(kubelet.options.podLogsDir, namespace, podName, uid)}/${containerLogPath(container, instance.restartCount)}`;
  return { found: true, path, containerId: chosen.id, uid };
}

/**
 * Reads and decodes a log file (with `raw`, the CRI log text as is); returns the text and the byte
 * offset read up to (for follow).
 */
export async function readContainerLog(path: string, raw = false): Promise<{ text: string; offset: number }> {
  const buffer = await readFile(path);
  // Up to the last complete line: the rest is a write in progress, read by follow.
  const end = buffer.lastIndexOf(0x0a) + 1;
  const text = buffer.subarray(0, end).toString('utf8');
  return { text: raw ? text : decodeCriLog(text), offset: end };
}

/**
 * Follows a log file from `offset` (`kubectl logs -f`): writes what is appended, polling every
 * `pollMs` on the clock, until `isRunning` says the container stopped (after one last read) or `signal`
 * aborts.
 */
export async function followContainerLog(
  path: string,
  offset: number,
  write: (text: string) => void,
  isRunning: () => Promise<boolean>,
  signal: AbortSignal,
  options: {
    clock: Clock;
    pollMs?: number;
    checkEveryMs?: number;
    /** Turns appended CRI log text into what is written (default: the decoded content). */
    decode?: (chunk: string) => string;
  },
): Promise<void> {
  const { clock } = options;
  const pollMs = options.pollMs ?? 200;
  const checkEveryMs = options.checkEveryMs ?? 1000;
  const bytes = new StringDecoder('utf8');
  const criDecoder = new CriLogDecoder();
  const decode = options.decode ?? ((chunk: string) => criDecoder.push(chunk));
  const file = await clock.track(open(path, 'r'));
  const buffer = Buffer.alloc(64 * 1024);
  let position = offset;
  let lastCheck = clock.now();
  const drain = async () => {
    for (;;) {
      const { bytesRead } = await clock.track(file.read(buffer, 0, buffer.length, position));
      if (bytesRead === 0) return;
      position += bytesRead;
      const text = decode(bytes.write(buffer.subarray(0, bytesRead)));
      if (text) write(text);
    }
  };
  /** One poll: what was appended, and whether the container still runs (then poll again). */
  const poll = async (): Promise<boolean> => {
    await drain();
    if (clock.now() - lastCheck < checkEveryMs) return true;
    lastCheck = clock.now();
    if (await isRunning()) return true;
    await drain();
    return false;
  };
  try {
    // One abort listener for the whole follow (a listener per poll once added up to
    // MaxListenersExceededWarning after 11 polls of one `kubectl logs -f`).
    await new Promise<void>((resolve, reject) => {
      const end = (error?: unknown) => {
        loop.stop();
        signal.removeEventListener('abort', onAbort);
        if (error === undefined) resolve();
        else reject(error as Error);
      };
      const onAbort = () => end();
      const loop = clock.loop(
        async () => {
          if (signal.aborted) return;
          try {
            if (!(await poll())) end();
          } catch (error) {
            end(error);
          }
        },
        { period: pollMs },
      );
      if (signal.aborted) end();
      else signal.addEventListener('abort', onAbort, { once: true });
    });
  } finally {
    await file.close();
  }
}
