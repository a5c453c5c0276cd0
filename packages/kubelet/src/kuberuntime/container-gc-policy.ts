/**
 * How many dead containers the kubelet keeps (upstream pkg/kubelet/container/container_gc.go
 * GCPolicy, set by `--minimum-container-ttl-duration`, `--maximum-dead-containers-per-container` and
 * `--maximum-dead-containers`).
 */
export interface ContainerGCPolicy {
  /** A container created more recently than this is never removed (0: no minimum). */
  minAgeMs: number;
  /** Dead containers kept per (pod, container name); negative: no limit. */
  maxPerPodContainer: number;
  /** Dead containers kept on the node; negative: no limit. */
  maxContainers: number;
}

/** Upstream's defaults: no minimum age, one dead container per container, no node-wide limit. */
export const DEFAULT_CONTAINER_GC_POLICY: ContainerGCPolicy = {
  minAgeMs: 0,
  maxPerPodContainer: 1,
  maxContainers: -1,
};

/** Upstream ContainerGCPeriod: how often dead containers, sandboxes and pod log directories are collected. */
export const CONTAINER_GC_PERIOD_MS = 60_000;

/** Refuses what upstream refuses (NewContainerGC: a negative minimum age), naming the field. */
export function validateContainerGCPolicy(p: ContainerGCPolicy): void {
  if (!(Number.isFinite(p.minAgeMs) && p.minAgeMs >= 0)) {
    throw new Error(`field "containerGC.minAgeMs" must be a duration of 0 or more, got ${p.minAgeMs}`);
  }
  for (const field of ['maxPerPodContainer', 'maxContainers'] as const) {
    if (!Number.isInteger(p[field])) {
      throw new Error(
        `field "containerGC.${field}" must be an integer (negative: no limit), got ${p[field]}`,
      );
    }
  }
}
