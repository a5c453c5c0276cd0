import { BUILTIN_IMAGES, type FakeImageConfig } from './image-config.js';
import type { SimulatedNodeConfig } from './simulated-node.js';

/** Configuration of the fake runtime (the `plugins.runtime-fake` section of the config file). */
export interface FakeRuntimeConfig {
  /**
   * How long every PullImage takes, in milliseconds of clock time. Default 100: a pull is never
   * instant, so a client's pull deadline shorter than that fails as it would against a registry.
   */
  pullLatencyMs?: number;
  /** References whose pull fails as a registry 404 would (NotFound). Normalised before comparing. */
  missingImages?: readonly string[];
  /** Images present from the start. Default: the pause image and busybox. */
  preloadedImages?: readonly string[];
  /** IPv4 range pod IPs come from (host-local style, `.1` is the gateway). Default 10.244.0.0/16. */
  podCIDR?: string;
  /**
   * Write container logs to `<sandbox logDirectory>/<container logPath>`, as runtimes do. Unset (the
   * default): written, and a file that cannot be created is a warning (the lines stay in memory);
   * true: such a file fails StartContainer, as in containerd; false: in memory only.
   */
  writeLogs?: boolean;
  /** Log lines kept in memory per container (the newest ones). Default 1000. */
  maxLogLines?: number;
  /**
   * The image table: user, entrypoint, cmd and start output of images, and which tags are one image.
   * Added to the built-in entries (pause, busybox, nginx), before them.
   */
  images?: readonly FakeImageConfig[];
  /**
   * The simulated machine: `memory`, `disk` (quantities), `inodes`, `pids`, and what the node uses
   * besides its pods (`usage: {memoryBytes, diskBytes, inodes, processes}`) — the stats the kubelet's
   * eviction manager reads.
   */
  node?: SimulatedNodeConfig;
}

export { BUILTIN_IMAGES, type FakeImageConfig };

/** The sandbox (pause) image the kubelet and containerd use by default. */
export const PAUSE_IMAGE = 'registry.k8s.io/pause:3.9';
export const BUSYBOX_IMAGE = 'docker.io/library/busybox:latest';

export const DEFAULT_CONFIG: Readonly<Required<Omit<FakeRuntimeConfig, 'writeLogs' | 'node'>>> & {
  readonly writeLogs: boolean | undefined;
} = Object.freeze({
  pullLatencyMs: 100,
  missingImages: Object.freeze([]),
  preloadedImages: Object.freeze([PAUSE_IMAGE, BUSYBOX_IMAGE]),
  podCIDR: '10.244.0.0/16',
  writeLogs: undefined,
  maxLogLines: 1000,
  images: Object.freeze([]),
});

/** JSON Schema of FakeRuntimeConfig, with its defaults (the kernel fills them in). */
export const fakeRuntimeConfigSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    pullLatencyMs: {
      type: 'number',
      minimum: 0,
      default: DEFAULT_CONFIG.pullLatencyMs,
      description: 'milliseconds every image pull takes on the clock',
    },
    missingImages: {
      type: 'array',
      items: { type: 'string' },
      default: [],
      description: 'image references whose pull fails with NotFound, as a registry 404',
    },
    preloadedImages: {
      type: 'array',
      items: { type: 'string' },
      default: [...DEFAULT_CONFIG.preloadedImages],
      description: 'images present from the start',
    },
    podCIDR: {
      type: 'string',
      pattern: '^\\d{1,3}(\\.\\d{1,3}){3}/\\d{1,2}$',
      default: DEFAULT_CONFIG.podCIDR,
      description: 'IPv4 CIDR pod IPs are allocated from',
    },
    writeLogs: {
      type: 'boolean',
      description:
        'write container logs to the files the kubelet reads (unset: written, a failure only warns; true: a failure fails the start)',
    },
    maxLogLines: {
      type: 'integer',
      minimum: 0,
      default: DEFAULT_CONFIG.maxLogLines,
      description: 'log lines kept in memory per container',
    },
    images: {
      type: 'array',
      default: [],
      description: 'image table: refs (tags of one image, or a repository), user, entrypoint, cmd, stdout',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['refs'],
        properties: {
          refs: { type: 'array', items: { type: 'string' }, minItems: 1 },
          user: { type: 'string' },
          entrypoint: { type: 'array', items: { type: 'string' } },
          cmd: { type: 'array', items: { type: 'string' } },
          stdout: { type: 'string' },
        },
      },
    },
    node: {
      type: 'object',
      additionalProperties: false,
      description:
        'the simulated machine: memory, disk, inodes, pids and what the node uses besides its pods',
      properties: {
        memory: { type: 'string' },
        disk: { type: 'string' },
        inodes: { type: 'integer', minimum: 0 },
        pids: { type: 'integer', minimum: 0 },
        usage: {
          type: 'object',
          additionalProperties: false,
          properties: {
            memoryBytes: { type: ['string', 'integer'] },
            diskBytes: { type: ['string', 'integer'] },
            inodes: { type: 'integer', minimum: 0 },
            processes: { type: 'integer', minimum: 0 },
          },
        },
      },
    },
  },
} as const;
