// Test support: a JSON Schema of the Summary API written from upstream's types
// (k8s.io/kubelet/pkg/apis/stats/v1alpha1/types.go). Fields without `omitempty` are required;
// unknown fields are refused, so a misspelt field fails validation.
const uint = { type: 'integer', minimum: 0 } as const;
/** metav1.Time: RFC 3339. */
const time = {
  type: 'string',
  pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?(Z|[+-]\\d{2}:\\d{2})$',
} as const;
const obj = (properties: Record<string, unknown>, required: string[] = []) => ({
  type: 'object',
  additionalProperties: false,
  properties,
  required,
});
const psi = { type: 'object' };

const fsStats = {
  time,
  availableBytes: uint,
  capacityBytes: uint,
  usedBytes: uint,
  inodesFree: uint,
  inodes: uint,
  inodesUsed: uint,
};
const interfaceStats = {
  name: { type: 'string' },
  rxBytes: uint,
  rxErrors: uint,
  txBytes: uint,
  txErrors: uint,
};

export const summarySchema = {
  $id: 'https://nodelet.dev/schemas/stats-v1alpha1-summary.json',
  $defs: {
    CPUStats: obj({ time, usageNanoCores: uint, usageCoreNanoSeconds: uint, psi }, ['time']),
    MemoryStats: obj(
      {
        time,
        availableBytes: uint,
        usageBytes: uint,
        workingSetBytes: uint,
        rssBytes: uint,
        pageFaults: uint,
        majorPageFaults: uint,
        psi,
      },
      ['time'],
    ),
    SwapStats: obj({ time, swapAvailableBytes: uint, swapUsageBytes: uint }, ['time']),
    FsStats: obj(fsStats, ['time']),
    InterfaceStats: obj(interfaceStats, ['name']),
    NetworkStats: obj(
      { time, ...interfaceStats, interfaces: { type: 'array', items: { $ref: '#/$defs/InterfaceStats' } } },
      ['time'],
    ),
    RuntimeStats: obj({ imageFs: { $ref: '#/$defs/FsStats' }, containerFs: { $ref: '#/$defs/FsStats' } }),
    RlimitStats: obj({ time, maxpid: uint, curproc: uint }, ['time']),
    ProcessStats: obj({ process_count: uint }),
    PodReference: obj({ name: { type: 'string' }, namespace: { type: 'string' }, uid: { type: 'string' } }, [
      'name',
      'namespace',
      'uid',
    ]),
    VolumeStats: obj(
      {
        ...fsStats,
        name: { type: 'string' },
        pvcRef: obj({ name: { type: 'string' }, namespace: { type: 'string' } }, ['name', 'namespace']),
        volumeHealthStats: obj({ abnormal: { type: 'boolean' } }, ['abnormal']),
      },
      ['time', 'name'],
    ),
    UserDefinedMetric: { type: 'object' },
    AcceleratorStats: { type: 'object' },
    ContainerStats: obj(
      {
        name: { type: 'string', minLength: 1 },
        startTime: time,
        cpu: { $ref: '#/$defs/CPUStats' },
        memory: { $ref: '#/$defs/MemoryStats' },
        accelerators: { type: 'array', items: { $ref: '#/$defs/AcceleratorStats' } },
        rootfs: { $ref: '#/$defs/FsStats' },
        logs: { $ref: '#/$defs/FsStats' },
        userDefinedMetrics: { type: 'array', items: { $ref: '#/$defs/UserDefinedMetric' } },
        swap: { $ref: '#/$defs/SwapStats' },
      },
      ['name', 'startTime'],
    ),
    PodStats: obj(
      {
        podRef: { $ref: '#/$defs/PodReference' },
        startTime: time,
        containers: { type: 'array', items: { $ref: '#/$defs/ContainerStats' } },
        cpu: { $ref: '#/$defs/CPUStats' },
        memory: { $ref: '#/$defs/MemoryStats' },
        network: { $ref: '#/$defs/NetworkStats' },
        volume: { type: 'array', items: { $ref: '#/$defs/VolumeStats' } },
        'ephemeral-storage': { $ref: '#/$defs/FsStats' },
        process_stats: { $ref: '#/$defs/ProcessStats' },
        swap: { $ref: '#/$defs/SwapStats' },
      },
      ['podRef', 'startTime', 'containers'],
    ),
    NodeStats: obj(
      {
        nodeName: { type: 'string', minLength: 1 },
        systemContainers: { type: 'array', items: { $ref: '#/$defs/ContainerStats' } },
        startTime: time,
        cpu: { $ref: '#/$defs/CPUStats' },
        memory: { $ref: '#/$defs/MemoryStats' },
        network: { $ref: '#/$defs/NetworkStats' },
        fs: { $ref: '#/$defs/FsStats' },
        runtime: { $ref: '#/$defs/RuntimeStats' },
        rlimit: { $ref: '#/$defs/RlimitStats' },
        swap: { $ref: '#/$defs/SwapStats' },
      },
      ['nodeName', 'startTime'],
    ),
  },
  ...obj(
    { node: { $ref: '#/$defs/NodeStats' }, pods: { type: 'array', items: { $ref: '#/$defs/PodStats' } } },
    ['node', 'pods'],
  ),
};
