import type { Container, ContainerState, ContainerStatus, Pod, Probe, Volume } from '@nodelet/api';
import { since } from './pod-printer.js';
import { tabwrite } from './tabwriter.js';

/**
 * `kubectl describe pod` output (kubectl's describePod, k8s.io/kubectl/pkg/describe), for the pods and
 * events a kubelet serves: the same sections, labels and indentation, aligned by the same tab writer, so
 * what users read here reads as it does in kubectl. A pure function of a pod, its events and "now".
 */

/** A v1 Event, as far as describe reads it. */
export interface DescribedEvent {
  type?: string;
  reason?: string;
  message?: string;
  count?: number;
  firstTimestamp?: string;
  lastTimestamp?: string;
  source?: { component?: string; host?: string };
  reportingComponent?: string;
}

export interface DescribeOptions {
  now: number;
  /** Print times in UTC instead of the local time zone (tests). */
  utc?: boolean;
}

const LEVEL = (n: number) => '  '.repeat(n);

/** Go's time.RFC1123Z: `Mon, 02 Jan 2006 15:04:05 -0700`. */
export function rfc1123z(timestamp: string | undefined, utc = false): string {
  const ms = timestamp ? Date.parse(timestamp) : NaN;
  if (Number.isNaN(ms)) return '<unknown>';
  const d = new Date(ms);
  const offset = utc ? 0 : -d.getTimezoneOffset();
  const local = new Date(ms + offset * 60_000);
  const days = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
  const months = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
  const pad = (n: number) => String(n).padStart(2, '0');
  const sign = offset < 0 ? '-' : '+';
  const abs = Math.abs(offset);
  return (
    `${days[local.getUTCDay()]}, ${pad(local.getUTCDate())} ${months[local.getUTCMonth()]} ${local.getUTCFullYear()} ` +
    `${pad(local.getUTCHours())}:${pad(local.getUTCMinutes())}:${pad(local.getUTCSeconds())} ` +
    `${sign}${pad(Math.floor(abs / 60))}${pad(abs % 60)}`
  );
}

/** kubectl's DescribeProbe: `http-get http://:8080/healthz delay=0s timeout=1s period=10s #success=1 #failure=3`. */
export function describeProbe(probe: Probe): string {
  const attrs =
    `delay=${probe.initialDelaySeconds ?? 0}s timeout=${probe.timeoutSeconds ?? 0}s ` +
    `period=${probe.periodSeconds ?? 0}s #success=${probe.successThreshold ?? 0} #failure=${probe.failureThreshold ?? 0}`;
  if (probe.exec) return `exec [${(probe.exec.command ?? []).join(' ')}] ${attrs}`;
  if (probe.httpGet) {
    const g = probe.httpGet;
    const port = g.port === undefined ? '' : String(g.port);
    const host = g.host ?? '';
    const hostPort = port ? (host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`) : host;
    return `http-get ${(g.scheme ?? '').toLowerCase()}://${hostPort}${g.path ?? ''} ${attrs}`;
  }
  if (probe.tcpSocket) return `tcp-socket ${probe.tcpSocket.host ?? ''}:${probe.tcpSocket.port} ${attrs}`;
  if (probe.grpc) return `grpc <pod>:${probe.grpc.port} ${probe.grpc.service ?? ''} ${attrs}`;
  return `unknown ${attrs}`;
}

/** Writes lines the way kubectl's PrefixWriter does, flushing through the tab writer at `flush()`. */
class Writer {
  private pending = '';
  private done = '';
  write(level: number, text: string): void {
    this.pending += LEVEL(level) + text;
  }
  flush(): void {
    this.done += tabwrite(this.pending);
    this.pending = '';
  }
  toString(): string {
    this.flush();
    return this.done;
  }
}

function multiline(w: Writer, title: string, entries: [string, string][], separator: string): void {
  w.write(0, `${title}:\t`);
  if (entries.length === 0) {
    w.write(0, '<none>\n');
    return;
  }
  entries
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .forEach(([key, value], i) => {
      if (i > 0) w.write(0, '\t');
      w.write(0, `${key}${separator}${value}\n`);
    });
}

const MAX_ANNOTATION_LEN = 140;

function annotations(w: Writer, values: Record<string, string>): void {
  const keys = Object.keys(values)
    .filter((k) => k !== 'kubectl.kubernetes.io/last-applied-configuration')
    .sort();
  w.write(0, 'Annotations:\t');
  if (keys.length === 0) {
    w.write(0, '<none>\n');
    return;
  }
  keys.forEach((key, i) => {
    if (i > 0) w.write(0, '\t');
    const value = values[key]!.replace(/\n$/, '');
    if (value.length + key.length + 2 > MAX_ANNOTATION_LEN || value.includes('\n')) {
      w.write(0, `${key}:\n`);
      for (const line of value.split('\n')) {
        const short =
          line.length > MAX_ANNOTATION_LEN - 2 ? `${line.slice(0, MAX_ANNOTATION_LEN - 5)}...` : line;
        w.write(0, `\t  ${short}\n`);
      }
    } else {
      w.write(0, `${key}: ${value}\n`);
    }
  });
}

function state(w: Writer, title: string, s: ContainerState | undefined, utc: boolean): void {
  if (s?.running) {
    w.write(2, `${title}:\tRunning\n`);
    w.write(3, `Started:\t${rfc1123z(s.running.startedAt, utc)}\n`);
  } else if (s?.waiting) {
    w.write(2, `${title}:\tWaiting\n`);
    if (s.waiting.reason) w.write(3, `Reason:\t${s.waiting.reason}\n`);
  } else if (s?.terminated) {
    const t = s.terminated;
    w.write(2, `${title}:\tTerminated\n`);
    if (t.reason) w.write(3, `Reason:\t${t.reason}\n`);
    if (t.message) w.write(3, `Message:\t${t.message}\n`);
    w.write(3, `Exit Code:\t${t.exitCode}\n`);
    if (t.signal) w.write(3, `Signal:\t${t.signal}\n`);
    w.write(3, `Started:\t${rfc1123z(t.startedAt, utc)}\n`);
    w.write(3, `Finished:\t${rfc1123z(t.finishedAt, utc)}\n`);
  } else {
    w.write(2, `${title}:\tWaiting\n`);
  }
}

function containers(
  w: Writer,
  label: string,
  list: readonly Container[],
  statuses: readonly ContainerStatus[],
  utc: boolean,
): void {
  w.write(0, `${label}:${list.length === 0 ? ' <none>' : ''}\n`);
  for (const c of list) {
    const status = statuses.find((s) => s.name === c.name);
    w.write(1, `${c.name}:\n`);
    if (status) w.write(2, `Container ID:\t${status.containerID ?? ''}\n`);
    w.write(2, `Image:\t${c.image ?? ''}\n`);
    if (status) w.write(2, `Image ID:\t${status.imageID ?? ''}\n`);
    const ports = (c.ports ?? []).map((p) => `${p.containerPort}/${p.protocol ?? 'TCP'}`).join(', ');
    const hostPorts = (c.ports ?? []).map((p) => `${p.hostPort ?? 0}/${p.protocol ?? 'TCP'}`).join(', ');
    w.write(2, ports.includes(',') ? `Ports:\t${ports}\n` : `Port:\t${ports || '<none>'}\n`);
    w.write(
      2,
      hostPorts.includes(',') ? `Host Ports:\t${hostPorts}\n` : `Host Port:\t${hostPorts || '<none>'}\n`,
    );
    for (const [title, args] of [
      ['Command', c.command],
      ['Args', c.args],
    ] as const) {
      if (!args?.length) continue;
      w.write(2, `${title}:\n`);
      for (const a of args) for (const line of a.split('\n')) w.write(3, `${line}\n`);
    }
    if (status) {
      state(w, 'State', status.state, utc);
      if (status.lastState?.terminated) state(w, 'Last State', status.lastState, utc);
      w.write(2, `Ready:\t${status.ready ? 'True' : 'False'}\n`);
      w.write(2, `Restart Count:\t${status.restartCount ?? 0}\n`);
    }
    for (const [title, values] of [
      ['Limits', c.resources?.limits],
      ['Requests', c.resources?.requests],
    ] as const) {
      const keys = Object.keys(values ?? {}).sort();
      if (keys.length === 0) continue;
      w.write(2, `${title}:\n`);
      for (const k of keys) w.write(3, `${k}:\t${values![k]}\n`);
    }
    if (c.livenessProbe) w.write(2, `Liveness:\t${describeProbe(c.livenessProbe)}\n`);
    if (c.readinessProbe) w.write(2, `Readiness:\t${describeProbe(c.readinessProbe)}\n`);
    if (c.startupProbe) w.write(2, `Startup:\t${describeProbe(c.startupProbe)}\n`);
    const env = c.env ?? [];
    w.write(2, `Environment:${env.length === 0 ? '\t<none>' : ''}\n`);
    for (const e of env) {
      if (e.valueFrom?.fieldRef) {
        w.write(
          3,
          `${e.name}:\t (${e.valueFrom.fieldRef.apiVersion ?? 'v1'}:${e.valueFrom.fieldRef.fieldPath})\n`,
        );
      } else if (e.valueFrom) {
        w.write(3, `${e.name}:\t<set from ${Object.keys(e.valueFrom)[0]}>\n`);
      } else {
        (e.value ?? '')
          .split('\n')
          .forEach((line, i) => w.write(3, i === 0 ? `${e.name}:\t${line}\n` : `\t${line}\n`));
      }
    }
    const mounts = [...(c.volumeMounts ?? [])].sort((a, b) => (a.mountPath < b.mountPath ? -1 : 1));
    w.write(2, `Mounts:${mounts.length === 0 ? '\t<none>' : ''}\n`);
    for (const m of mounts) {
      const flags = [m.readOnly ? 'ro' : 'rw', ...(m.subPath ? [`path=${JSON.stringify(m.subPath)}`] : [])];
      w.write(3, `${m.mountPath} from ${m.name} (${flags.join(',')})\n`);
    }
  }
}

function volumes(w: Writer, list: readonly Volume[]): void {
  if (list.length === 0) {
    w.write(0, 'Volumes:\t<none>\n');
    return;
  }
  w.write(0, 'Volumes:\n');
  for (const v of list) {
    w.write(1, `${v.name}:\n`);
    if (v.hostPath) {
      w.write(2, 'Type:\tHostPath (bare host directory volume)\n');
      w.write(2, `Path:\t${v.hostPath.path}\n`);
      w.write(2, `HostPathType:\t${v.hostPath.type ?? ''}\n`);
    } else if (v.emptyDir) {
      w.write(2, "Type:\tEmptyDir (a temporary directory that shares a pod's lifetime)\n");
      w.write(2, `Medium:\t${v.emptyDir.medium ?? ''}\n`);
      w.write(2, `SizeLimit:\t${v.emptyDir.sizeLimit ?? '<unset>'}\n`);
    } else if (v.configMap) {
      w.write(2, 'Type:\tConfigMap (a volume populated by a ConfigMap)\n');
      w.write(2, `Name:\t${v.configMap.name ?? ''}\n`);
      w.write(2, `Optional:\t${!!v.configMap.optional}\n`);
    } else if (v.secret) {
      w.write(2, 'Type:\tSecret (a volume populated by a Secret)\n');
      w.write(2, `SecretName:\t${v.secret.secretName ?? ''}\n`);
      w.write(2, `Optional:\t${!!v.secret.optional}\n`);
    } else if (v.downwardAPI) {
      w.write(2, 'Type:\tDownwardAPI (a volume populated by information about the pod)\n');
      w.write(2, 'Items:\n');
      for (const item of v.downwardAPI.items ?? []) {
        if (item.fieldRef) w.write(3, `${item.fieldRef.fieldPath} -> ${item.path}\n`);
        if (item.resourceFieldRef) w.write(3, `${item.resourceFieldRef.resource} -> ${item.path}\n`);
      }
    } else if (v.projected) {
      w.write(2, 'Type:\tProjected (a volume that contains injected data from multiple sources)\n');
    } else {
      w.write(2, '<unknown>\n');
    }
  }
}

function events(w: Writer, list: readonly DescribedEvent[], now: number): void {
  if (list.length === 0) {
    w.write(0, 'Events:\t<none>\n');
    return;
  }
  w.flush();
  const sorted = [...list].sort(
    (a, b) => Date.parse(a.lastTimestamp ?? '') - Date.parse(b.lastTimestamp ?? ''),
  );
  w.write(0, 'Events:\n  Type\tReason\tAge\tFrom\tMessage\n');
  w.write(1, '----\t------\t----\t----\t-------\n');
  for (const e of sorted) {
    const first = since(e.firstTimestamp, now);
    const age = (e.count ?? 1) > 1 ? `${since(e.lastTimestamp, now)} (x${e.count} over ${first})` : first;
    const from = e.source?.component || e.reportingComponent || '';
    w.write(1, `${e.type ?? ''}\t${e.reason ?? ''}\t${age}\t${from}\t${(e.message ?? '').trim()}\n`);
  }
}

export function describePod(
  pod: Pod,
  podEvents: readonly DescribedEvent[],
  options: DescribeOptions,
): string {
  const w = new Writer();
  const meta = pod.metadata ?? {};
  const spec = pod.spec ?? { containers: [] };
  const status = pod.status ?? {};
  const utc = !!options.utc;
  w.write(0, `Name:\t${meta.name ?? ''}\n`);
  w.write(0, `Namespace:\t${meta.namespace ?? 'default'}\n`);
  if (spec.priority !== undefined) w.write(0, `Priority:\t${spec.priority}\n`);
  if (spec.priorityClassName) w.write(0, `Priority Class Name:\t${spec.priorityClassName}\n`);
  if (spec.runtimeClassName) w.write(0, `Runtime Class Name:\t${spec.runtimeClassName}\n`);
  if (spec.serviceAccountName) w.write(0, `Service Account:\t${spec.serviceAccountName}\n`);
  w.write(0, spec.nodeName ? `Node:\t${spec.nodeName}/${status.hostIP ?? ''}\n` : 'Node:\t<none>\n');
  if (status.startTime) w.write(0, `Start Time:\t${rfc1123z(status.startTime, utc)}\n`);
  multiline(w, 'Labels', Object.entries(meta.labels ?? {}), '=');
  annotations(w, meta.annotations ?? {});
  if (meta.deletionTimestamp && status.phase !== 'Failed' && status.phase !== 'Succeeded') {
    w.write(0, `Status:\tTerminating (lasts ${since(meta.deletionTimestamp, options.now)})\n`);
    w.write(0, `Termination Grace Period:\t${meta.deletionGracePeriodSeconds ?? 0}s\n`);
  } else {
    w.write(0, `Status:\t${status.phase ?? ''}\n`);
  }
  if (status.reason) w.write(0, `Reason:\t${status.reason}\n`);
  if (status.message) w.write(0, `Message:\t${status.message}\n`);
  w.write(0, `IP:\t${status.podIP ?? ''}\n`);
  const ips = status.podIPs ?? [];
  if (ips.length === 0) w.write(0, 'IPs:\t<none>\n');
  else {
    w.write(0, 'IPs:\n');
    for (const ip of ips) w.write(1, `IP:\t${ip.ip}\n`);
  }
  const owner = (meta.ownerReferences ?? []).find((o) => o.controller);
  if (owner) w.write(0, `Controlled By:\t${owner.kind}/${owner.name}\n`);
  if (spec.initContainers?.length) {
    containers(w, 'Init Containers', spec.initContainers, status.initContainerStatuses ?? [], utc);
  }
  containers(w, 'Containers', spec.containers ?? [], status.containerStatuses ?? [], utc);
  const conditions = status.conditions ?? [];
  if (conditions.length > 0) {
    w.write(0, 'Conditions:\n  Type\tStatus\n');
    for (const c of conditions) w.write(1, `${c.type} \t${c.status} \n`);
  }
  volumes(w, spec.volumes ?? []);
  w.write(0, `QoS Class:\t${status.qosClass ?? ''}\n`);
  multiline(w, 'Node-Selectors', Object.entries(spec.nodeSelector ?? {}), '=');
  const tolerations = spec.tolerations ?? [];
  w.write(0, 'Tolerations:\t');
  if (tolerations.length === 0) w.write(0, '<none>\n');
  tolerations.forEach((t, i) => {
    if (i > 0) w.write(0, '\t');
    let text = t.key ?? '';
    if (t.value) text += `=${t.value}`;
    if (t.effect) text += `:${t.effect}`;
    if (t.operator === 'Exists' && !t.value) text += t.key || t.effect ? ' op=Exists' : 'op=Exists';
    if (t.tolerationSeconds !== undefined && t.tolerationSeconds !== null)
      text += ` for ${t.tolerationSeconds}s`;
    w.write(0, `${text}\n`);
  });
  events(w, podEvents, options.now);
  return w.toString();
}
