/**
 * A CRI RuntimeService/ImageService that counts and times every call for the kubelet's runtime
 * operation metrics, as upstream's instrumentedRuntimeService does. Operation names are upstream's
 * (`run_podsandbox`, `list_containers`, `pull_image`, …).
 */
import type { Clock } from '@nodelet/kernel';
import type { KubeletMetrics } from './kubelet-metrics.js';

/** Upstream's names where they are not the method name in snake case. */
const OPERATION_NAMES: Record<string, string> = {
  runPodSandbox: 'run_podsandbox',
  stopPodSandbox: 'stop_podsandbox',
  removePodSandbox: 'remove_podsandbox',
  podSandboxStatus: 'podsandbox_status',
  listPodSandbox: 'list_podsandbox',
  updateContainerResources: 'update_container',
  podSandboxStats: 'podsandbox_stats',
  listPodSandboxStats: 'list_podsandbox_stats',
};

/** The CRI calls (RuntimeService and ImageService); a provider's other methods are not runtime operations. */
const CRI_METHODS = new Set([
  'version',
  'runPodSandbox',
  'stopPodSandbox',
  'removePodSandbox',
  'podSandboxStatus',
  'listPodSandbox',
  'createContainer',
  'startContainer',
  'stopContainer',
  'removeContainer',
  'listContainers',
  'containerStatus',
  'updateContainerResources',
  'reopenContainerLog',
  'execSync',
  'exec',
  'attach',
  'portForward',
  'containerStats',
  'listContainerStats',
  'podSandboxStats',
  'listPodSandboxStats',
  'updateRuntimeConfig',
  'status',
  'runtimeConfig',
  'updatePodSandboxResources',
  'listImages',
  'imageStatus',
  'pullImage',
  'removeImage',
  'imageFsInfo',
]);

export function operationName(method: string): string {
  return OPERATION_NAMES[method] ?? method.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/** Wraps the CRI methods of `service`; everything else passes through (bound to the service). */
export function instrumentRuntime<T extends object>(service: T, metrics: KubeletMetrics, clock: Clock): T {
  const wrapped = new Map<PropertyKey, unknown>();
  return new Proxy(service, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      if (typeof value !== 'function' || typeof property !== 'string' || !CRI_METHODS.has(property))
        return value;
      let fn = wrapped.get(property);
      if (!fn) {
        const operation = operationName(property);
        fn = function (this: unknown, ...args: unknown[]) {
          const start = clock.now();
          const done = (failed: boolean) => {
            metrics.runtimeOperations.inc({ operation_type: operation });
            metrics.runtimeOperationsDuration.observe(
              { operation_type: operation },
              (clock.now() - start) / 1000,
            );
            if (failed) metrics.runtimeOperationsErrors.inc({ operation_type: operation });
          };
          let result: unknown;
          try {
            result = (value as (...a: unknown[]) => unknown).apply(target, args);
          } catch (err) {
            done(true);
            throw err;
          }
          if (result instanceof Promise) {
            return result.then(
              (v) => {
                done(false);
                return v;
              },
              (err) => {
                done(true);
                throw err;
              },
            );
          }
          done(false);
          return result;
        };
        wrapped.set(property, fn);
      }
      return fn;
    },
  });
}
