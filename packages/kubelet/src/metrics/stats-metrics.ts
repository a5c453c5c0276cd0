/**
 * `/metrics/resource` (upstream's resource metrics collector, what metrics-server reads) and
 * `/metrics/cadvisor` (the container_* series of cAdvisor that dashboards query), both computed per
 * scrape from one stats snapshot.
 */
import type { StatsProvider, StatsSnapshot, ContainerSummaryStats, PodStats } from '@nodelet/cri';
import { containerKey } from '@nodelet/cri';
import { type Family, type Sample, writeFamilies } from './exposition.js';

const ms = (time: string | undefined) => (time ? Date.parse(time) : undefined);
const seconds = (ns: number | undefined) => (ns === undefined ? undefined : ns / 1e9);

function family(name: string, help: string, type: Family['type']): Family {
  return { name, help, type, samples: [] };
}

function push(f: Family, labels: Record<string, string>, value: number | undefined, time?: string): void {
  if (value === undefined) return;
  const sample: Sample = { labels, value };
  const at = ms(time);
  if (at !== undefined) sample.timestampMs = at;
  f.samples.push(sample);
}

/** The resource metrics of a snapshot; a failed snapshot is `scrape_error 1` and nothing else. */
export async function resourceMetricsText(provider: StatsProvider): Promise<string> {
  let snapshot: StatsSnapshot | undefined;
  try {
    snapshot = await provider.snapshot();
  } catch {
    snapshot = undefined;
  }
  const error = snapshot ? 0 : 1;
  const scrape = family(
    'scrape_error',
    '1 if there was an error while getting container metrics, 0 otherwise',
    'gauge',
  );
  const resourceScrape = family(
    'resource_scrape_error',
    '1 if there was an error while getting container metrics, 0 otherwise',
    'gauge',
  );
  push(scrape, {}, error);
  push(resourceScrape, {}, error);
  if (!snapshot) return writeFamilies([resourceScrape, scrape]);
  const nodeCpu = family(
    'node_cpu_usage_seconds_total',
    'Cumulative cpu time consumed by the node in core-seconds',
    'counter',
  );
  const nodeMem = family(
    'node_memory_working_set_bytes',
    'Current working set of the node in bytes',
    'gauge',
  );
  const podCpu = family(
    'pod_cpu_usage_seconds_total',
    'Cumulative cpu time consumed by the pod in core-seconds',
    'counter',
  );
  const podMem = family('pod_memory_working_set_bytes', 'Current working set of the pod in bytes', 'gauge');
  const cCpu = family(
    'container_cpu_usage_seconds_total',
    'Cumulative cpu time consumed by the container in core-seconds',
    'counter',
  );
  const cMem = family(
    'container_memory_working_set_bytes',
    'Current working set of the container in bytes',
    'gauge',
  );
  const cStart = family(
    'container_start_time_seconds',
    'Start time of the container since unix epoch in seconds',
    'gauge',
  );
  const { node, pods } = snapshot;
  push(nodeCpu, {}, seconds(node.cpu?.usageCoreNanoSeconds), node.cpu?.time);
  push(nodeMem, {}, node.memory?.workingSetBytes, node.memory?.time);
  for (const pod of pods) {
    const podLabels = { namespace: pod.podRef.namespace, pod: pod.podRef.name };
    push(podCpu, podLabels, seconds(pod.cpu?.usageCoreNanoSeconds), pod.cpu?.time);
    push(podMem, podLabels, pod.memory?.workingSetBytes, pod.memory?.time);
    for (const c of pod.containers) {
      const labels = { container: c.name, ...podLabels };
      push(cCpu, labels, seconds(c.cpu?.usageCoreNanoSeconds), c.cpu?.time);
      push(cMem, labels, c.memory?.workingSetBytes, c.memory?.time);
      push(cStart, labels, Date.parse(c.startTime) / 1000, c.cpu?.time);
    }
  }
  return writeFamilies([cCpu, cMem, cStart, nodeCpu, nodeMem, podCpu, podMem, resourceScrape, scrape]);
}

type CadvisorLabels = {
  container: string;
  id: string;
  image: string;
  name: string;
  namespace: string;
  pod: string;
};

/** cAdvisor's series: the node's root cgroup (`id="/"`), each pod and each container. */
export async function cadvisorMetricsText(provider: StatsProvider): Promise<string> {
  const snapshot = await provider.snapshot();
  const f = {
    cpu: family('container_cpu_usage_seconds_total', 'Cumulative cpu time consumed in seconds.', 'counter'),
    ws: family('container_memory_working_set_bytes', 'Current working set in bytes.', 'gauge'),
    rss: family('container_memory_rss', 'Size of RSS in bytes.', 'gauge'),
    cache: family('container_memory_cache', 'Number of bytes of page cache memory.', 'gauge'),
    usage: family(
      'container_memory_usage_bytes',
      'Current memory usage in bytes, including all memory regardless of when it was accessed',
      'gauge',
    ),
    faults: family(
      'container_memory_failures_total',
      'Cumulative count of memory allocation failures.',
      'counter',
    ),
    rx: family('container_network_receive_bytes_total', 'Cumulative count of bytes received', 'counter'),
    rxErr: family(
      'container_network_receive_errors_total',
      'Cumulative count of errors encountered while receiving',
      'counter',
    ),
    tx: family('container_network_transmit_bytes_total', 'Cumulative count of bytes transmitted', 'counter'),
    txErr: family(
      'container_network_transmit_errors_total',
      'Cumulative count of errors encountered while transmitting',
      'counter',
    ),
    fs: family(
      'container_fs_usage_bytes',
      'Number of bytes that are consumed by the container on this filesystem.',
      'gauge',
    ),
    start: family(
      'container_start_time_seconds',
      'Start time of the container since unix epoch in seconds.',
      'gauge',
    ),
  };
  const one = (labels: CadvisorLabels, s: Pick<ContainerSummaryStats, 'cpu' | 'memory'>, start?: string) => {
    push(f.cpu, labels, seconds(s.cpu?.usageCoreNanoSeconds), s.cpu?.time);
    push(f.ws, labels, s.memory?.workingSetBytes, s.memory?.time);
    push(f.rss, labels, s.memory?.rssBytes, s.memory?.time);
    const cache =
      s.memory?.usageBytes !== undefined && s.memory.rssBytes !== undefined
        ? Math.max(0, s.memory.usageBytes - s.memory.rssBytes)
        : undefined;
    push(f.cache, labels, cache, s.memory?.time);
    push(f.usage, labels, s.memory?.usageBytes, s.memory?.time);
    push(
      f.faults,
      { ...labels, failure_type: 'pgfault', scope: 'container' } as never,
      s.memory?.pageFaults,
      s.memory?.time,
    );
    push(
      f.faults,
      { ...labels, failure_type: 'pgmajfault', scope: 'container' } as never,
      s.memory?.majorPageFaults,
      s.memory?.time,
    );
    if (start) push(f.start, labels, Date.parse(start) / 1000);
  };
  const root: CadvisorLabels = { container: '', id: '/', image: '', name: '', namespace: '', pod: '' };
  one(root, snapshot.node, snapshot.node.startTime);
  for (const pod of snapshot.pods) podSeries(pod, snapshot, f, one);
  return writeFamilies(Object.values(f));
}

function podSeries(
  pod: PodStats,
  snapshot: StatsSnapshot,
  f: Record<'rx' | 'rxErr' | 'tx' | 'txErr' | 'fs', Family>,
  one: (labels: CadvisorLabels, s: Pick<ContainerSummaryStats, 'cpu' | 'memory'>, start?: string) => void,
): void {
  const { name, namespace, uid } = pod.podRef;
  const podCgroup = `/kubepods/pod${uid}`;
  const podLabels: CadvisorLabels = {
    container: '',
    id: podCgroup,
    image: '',
    name: '',
    namespace,
    pod: name,
  };
  one(podLabels, pod, pod.startTime);
  for (const i of pod.network?.interfaces ?? []) {
    const labels = { ...podLabels, interface: i.name } as never;
    push(f.rx, labels, i.rxBytes, pod.network?.time);
    push(f.rxErr, labels, i.rxErrors, pod.network?.time);
    push(f.tx, labels, i.txBytes, pod.network?.time);
    push(f.txErr, labels, i.txErrors, pod.network?.time);
  }
  for (const c of pod.containers) {
    const identity = snapshot.containerIdentities.get(containerKey(uid, c.name));
    const id = identity?.id ?? '';
    const labels: CadvisorLabels = {
      container: c.name,
      id: `${podCgroup}/${id}`,
      image: identity?.image ?? '',
      name: id,
      namespace,
      pod: name,
    };
    one(labels, c, c.startTime);
    const used = (c.rootfs?.usedBytes ?? 0) + (c.logs?.usedBytes ?? 0);
    push(f.fs, { ...labels, device: '/dev/root' } as never, used, c.rootfs?.time);
  }
}
