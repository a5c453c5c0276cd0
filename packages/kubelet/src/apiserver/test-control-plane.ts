// What the kubelet-against-the-control-plane tests share: the control plane loaded at run time (skipped
// when it is not built), kubectl found or not, a kubelet joined over HTTPS, and bounded waits.
import test from 'ava';
import { execFile } from 'node:child_process';
import { accessSync, constants, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import {
  type Clock,
  createLogger,
  EventBus,
  type Logger,
  MemorySink,
  RealClock,
  VirtualClock,
} from '@nodelet/kernel';
import { FakeRuntime } from '@nodelet/runtime-fake';
import { applyStaticPodDefaults } from '../config/index.js';
import { Kubelet } from '../kubelet.js';
import { apiPod, StaticSource } from './test-harness.js';

export interface ControlPlaneLike {
  url: string;
  kubeconfigPath: string;
  start(): Promise<void>;
  stop(): Promise<void>;
  nodeKubeconfig(node: string): Promise<string>;
}

export const specifier = '@nodelet/controlplane';
export let ControlPlaneClass: (new (o: object) => ControlPlaneLike) | undefined;
try {
  ControlPlaneClass = ((await import(specifier)) as { ControlPlane?: new (o: object) => ControlPlaneLike })
    .ControlPlane;
} catch {
  ControlPlaneClass = undefined;
}
export const kubectlBinary = process.env.KUBECTL ?? '/usr/bin/kubectl';
export const kubectlMissing = (() => {
  try {
    accessSync(kubectlBinary, constants.X_OK);
    return undefined;
  } catch {
    return `kubectl not found at ${kubectlBinary} (set KUBECTL, or apt-get install kubernetes-client)`;
  }
})();
if (ControlPlaneClass && kubectlMissing) {
  if (process.env.CI === 'true') test('kubectl is required in CI (CI=true)', (t) => t.fail(kubectlMissing));
  else test.skip(`${kubectlMissing}; skipping the kubectl tests`, () => undefined);
}
export const cpTest = ControlPlaneClass ? test.serial : test.skip;
/** The tests that also run the real kubectl. */
export const cpKubectlTest = ControlPlaneClass && !kubectlMissing ? test.serial : () => undefined;

export interface Env {
  cp: ControlPlaneLike;
  dataDir: string;
  clock: Clock;
  logger: Logger;
  logs: MemorySink;
  core: k8s.CoreV1Api;
  coordination: k8s.CoordinationV1Api;
  kubectl(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }>;
}

export async function startControlPlane(
  dataDir = mkdtempSync(join(tmpdir(), 'nodelet-cp-')),
  port = 0,
): Promise<Env> {
  const clock = new RealClock();
  const logs = new MemorySink();
  const logger = createLogger({ sink: logs.sink, level: 'debug' });
  const cp = new ControlPlaneClass!({ dataDir, clock, logger: logger.child('cp'), port });
  await cp.start();
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(cp.kubeconfigPath);
  return {
    cp,
    dataDir,
    clock,
    logger,
    logs,
    core: kc.makeApiClient(k8s.CoreV1Api),
    coordination: kc.makeApiClient(k8s.CoordinationV1Api),
    kubectl: (...args) =>
      new Promise((resolve) => {
        execFile(
          process.env.KUBECTL ?? 'kubectl',
          ['--kubeconfig', cp.kubeconfigPath, '--cache-dir', join(dataDir, 'kubectl-cache'), ...args],
          { timeout: 30_000, env: { ...process.env, KUBECONFIG: '' } },
          (err, stdout, stderr) =>
            resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
        );
      }),
  };
}

export interface Node {
  kubelet: Kubelet;
  runtime: FakeRuntime;
  statics: StaticSource;
  logs: MemorySink;
  creates: () => number;
}

export function makeKubelet(
  env: Env,
  kubeconfig: string,
  options: { runtime?: FakeRuntime; rootDir?: string; name?: string } = {},
): Node {
  const logs = new MemorySink();
  const logger = createLogger({ sink: logs.sink, level: 'debug' });
  const bus = new EventBus(env.clock, logger);
  // Instant pulls: these tests time the kubelet, not a registry (the fake's default is 100 ms).
  const runtime =
    options.runtime ?? new FakeRuntime({ clock: env.clock, logger, config: { pullLatencyMs: 0 } });
  let creates = 0;
  const create = runtime.createContainer.bind(runtime);
  runtime.createContainer = async (req) => {
    creates++;
    return create(req);
  };
  const statics = new StaticSource();
  const dir = options.rootDir ?? mkdtempSync(join(tmpdir(), 'nodelet-kubelet-'));
  const kubelet = new Kubelet(
    { runtime, images: runtime, bus, clock: env.clock, logger },
    {
      nodeName: options.name ?? 'node1',
      hostIP: '127.0.0.1',
      rootDir: join(dir, 'root'),
      podLogsDir: join(dir, 'logs'),
      sources: [statics],
      tmpfsVolumes: false, // simulated pods: no tmpfs mounts on the host, none left behind
      apiServer: { kubeconfig, capacity: { cpu: '8', memory: '16Gi', pods: '110' } },
    },
  );
  return { kubelet, runtime, statics, logs, creates: () => creates };
}

/** Polls `fn` until it returns a truthy value (real time, bounded). */
export async function until<T>(
  what: string,
  fn: () => Promise<T | undefined | false>,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export const podBody = (name: string, extra: object = {}) => {
  const pod = apiPod(name, extra);
  delete (pod.spec as { nodeName?: string }).nodeName; // the scheduler binds it
  return pod as k8s.V1Pod;
};

export function staticPodFor(name: string, nodeName: string) {
  return applyStaticPodDefaults(
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: 'kube-system' },
      spec: { containers: [{ name: 'main', image: 'busybox:1.36', imagePullPolicy: 'IfNotPresent' }] },
    },
    { source: 'file', origin: `/manifests/${name}.yaml`, nodeName, now: Date.now() },
  );
}

/**
 * Advances virtual time in steps, giving real I/O (HTTPS to the control plane, its watches) a few real
 * milliseconds per step, until `done` holds; returns the virtual milliseconds it took.
 */
export async function advanceUntil(
  clock: VirtualClock,
  done: () => Promise<boolean> | boolean,
  maxMs: number,
  stepMs = 100,
): Promise<number> {
  const start = clock.elapsed();
  for (;;) {
    if (await done()) return clock.elapsed() - start;
    if (clock.elapsed() - start >= maxMs) throw new Error(`not within ${maxMs} ms of virtual time`);
    await clock.advance(stepMs);
    await new Promise((r) => setTimeout(r, 3));
  }
}

export async function adminClients(cp: ControlPlaneLike, dataDir: string) {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(cp.kubeconfigPath);
  return {
    cp,
    dataDir,
    core: kc.makeApiClient(k8s.CoreV1Api),
    coordination: kc.makeApiClient(k8s.CoordinationV1Api),
  };
}
