import { randomBytes } from 'node:crypto';
import { chmod, mkdir, open, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Container, ContainerState, Pod, PodStatus } from '@nodelet/api';
import { CriAnnotations, Mount, type ContainerStatus as CriContainerStatus } from '@nodelet/cri';
import { errorMessage } from '@nodelet/kernel';
import { decodeCriLog, tailLines } from '../container-logs.js';

/**
 * Termination messages, as upstream's kubelet keeps them (kuberuntime_container.go makeMounts,
 * getTerminationMessage, readLastStringFromContainerLogs): before a container is created the kubelet
 * makes an empty file for it under `<root>/pods/<uid>/containers/<name>/` and mounts it at the
 * container's `terminationMessagePath`; after the container exits it reads back at most the last 4 KiB
 * of whatever file is mounted there. With `FallbackToLogsOnError`, a failed container that left the file
 * empty gets the tail of its log instead: the last 80 lines, at most their last 2 KiB.
 */

/** Upstream kubecontainer.MaxContainerTerminationMessageLength. */
export const MAX_CONTAINER_MESSAGE_BYTES = 4 * 1024;
/** Upstream kubecontainer.MaxContainerTerminationMessageLogLength. */
export const MAX_LOG_MESSAGE_BYTES = 2 * 1024;
/** Upstream kubecontainer.MaxContainerTerminationMessageLogLines. */
export const MAX_LOG_MESSAGE_LINES = 80;
/** Upstream kubecontainer.MaxPodTerminationMessageLogLength: shared evenly by the pod's containers. */
export const MAX_POD_MESSAGE_BYTES = 12 * 1024;

const DEFAULT_PATH = '/dev/termination-log';
/** The log text read for a fallback message: enough for 80 lines of any ordinary length. */
const LOG_READ_BYTES = 256 * 1024;

/** `<root>/pods/<uid>/containers/<container name>` (upstream getPodContainerDir). */
export function podContainerDir(rootDir: string, uid: string, name: string): string {
  return join(rootDir, 'pods', uid, 'containers', name);
}

/**
 * The mount of a new termination-message file for one instance of the container (a random name per
 * instance, mode 0666 whatever the umask, in a 0750 directory — as upstream), or undefined when the path
 * is empty or one of the container's volumes is mounted there (then that volume's file is read back).
 */
export async function terminationMessageMount(
  rootDir: string,
  uid: string,
  container: Container,
): Promise<Mount | undefined> {
  const path = container.terminationMessagePath ?? DEFAULT_PATH;
  if (!path) return undefined;
  if ((container.volumeMounts ?? []).some((vm) => vm.mountPath.replace(/\/+$/, '') === path))
    return undefined;
  const dir = podContainerDir(rootDir, uid, container.name);
  await mkdir(dir, { recursive: true, mode: 0o750 });
  const hostPath = join(dir, randomBytes(4).toString('hex'));
  await writeFile(hostPath, '');
  await chmod(hostPath, 0o666);
  return Mount.fromPartial({ containerPath: path, hostPath });
}

/**
 * The message of an exited container from its CRI status (upstream toKubeContainerStatus): the runtime's
 * own message, then `: ` and what the container left in its termination-message file — or, under
 * FallbackToLogsOnError after a failure, the tail of its log.
 */
export async function exitedContainerMessage(s: CriContainerStatus): Promise<string> {
  const path = s.annotations[CriAnnotations.ContainerTerminationMessagePath] ?? '';
  const policy = s.annotations[CriAnnotations.ContainerTerminationMessagePolicy] ?? 'File';
  // A container that could not even run has no logs to fall back to.
  const fallback =
    policy === 'FallbackToLogsOnError' && s.exitCode !== 0 && s.reason !== 'ContainerCannotRun';
  const read = await fromFile(s, path, fallback);
  const message = read.checkLogs ? await lastLogText(s.logPath) : read.message;
  if (!message) return s.message;
  return s.message ? `${s.message}: ${message}` : message;
}

async function fromFile(
  s: CriContainerStatus,
  path: string,
  fallback: boolean,
): Promise<{ message: string; checkLogs: boolean }> {
  if (!path) return { message: '', checkLogs: fallback };
  const mount = s.mounts.find((m) => m.containerPath === path);
  if (!mount) return { message: '', checkLogs: fallback };
  try {
    const data = await readLast(mount.hostPath, MAX_CONTAINER_MESSAGE_BYTES);
    return { message: data.toString('utf8'), checkLogs: fallback && data.length === 0 };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { message: '', checkLogs: fallback };
    return {
      message: `Error on reading termination log ${mount.hostPath}: ${errorMessage(err)}`,
      checkLogs: false,
    };
  }
}

/** The last 80 lines of a CRI log file, at most their last 2 KiB (upstream keeps them in a ring buffer). */
export async function lastLogText(logPath: string): Promise<string> {
  let text: string;
  try {
    const data = await readLast(logPath, LOG_READ_BYTES);
    text = data.toString('utf8');
    // Read from the middle of the file: the first line is a piece of one.
    if (data.length === LOG_READ_BYTES) text = text.slice(text.indexOf('\n') + 1);
  } catch (err) {
    return `Error on reading termination message from logs: ${errorMessage(err)}`;
  }
  const tail = Buffer.from(tailLines(decodeCriLog(text), MAX_LOG_MESSAGE_LINES));
  return lastBytes(tail, MAX_LOG_MESSAGE_BYTES);
}

/** The last `max` bytes of a file (upstream tail.ReadAtMost). */
async function readLast(path: string, max: number): Promise<Buffer> {
  const file = await open(path, 'r');
  try {
    const { size } = await file.stat();
    const length = Math.min(size, max);
    const buffer = Buffer.alloc(length);
    const { bytesRead } = await file.read(buffer, 0, length, size - length);
    return buffer.subarray(0, bytesRead);
  } finally {
    await file.close();
  }
}

/** The last `max` bytes of text, not starting inside a UTF-8 character. */
function lastBytes(data: Buffer, max: number): string {
  let start = Math.max(0, data.length - max);
  while (start < data.length && (data[start]! & 0xc0) === 0x80) start++;
  return data.subarray(start).toString('utf8');
}

/** The first `max` bytes of text, not ending inside a UTF-8 character. */
export function firstBytes(text: string, max: number): string {
  const data = Buffer.from(text);
  if (data.length <= max) return text;
  let end = max;
  while (end > 0 && (data[end]! & 0xc0) === 0x80) end--;
  return data.subarray(0, end).toString('utf8');
}

/**
 * The pod's budget for termination messages (upstream status manager's normalizeStatus): 12 KiB shared
 * evenly by its init and app containers, each message cut to its share (state and lastState alike).
 */
export function limitTerminationMessages(pod: Pod, status: PodStatus): void {
  const containers = (pod.spec?.containers.length ?? 0) + (pod.spec?.initContainers?.length ?? 0);
  const share = containers > 0 ? Math.floor(MAX_POD_MESSAGE_BYTES / containers) : MAX_POD_MESSAGE_BYTES;
  const cut = (state: ContainerState | undefined) => {
    const t = state?.terminated;
    if (t?.message) t.message = firstBytes(t.message, share);
  };
  for (const list of [status.initContainerStatuses, status.containerStatuses]) {
    for (const c of list ?? []) {
      cut(c.state);
      cut(c.lastState);
    }
  }
}
