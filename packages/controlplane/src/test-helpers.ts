import { execFile } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { Agent, request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Implementation, TestFn } from 'ava';
import { createLogger, MemorySink, RealClock } from '@nodelet/kernel';
import { ControlPlane, type ControlPlaneOptions } from './control-plane.js';
import { ApiError } from './apiserver/status.js';

/**
 * Test support: a control plane on a temporary data directory and a free port, the real kubectl run
 * against it, and a raw HTTPS client that authenticates with the admin certificate.
 */
export interface TestCluster {
  cp: ControlPlane;
  dataDir: string;
  logs: MemorySink;
  kubectl(args: string[], options?: { input?: string; timeoutMs?: number }): Promise<KubectlResult>;
  api(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<ApiResponse>;
  stop(): Promise<void>;
  /** Stops and removes the data directory. */
  destroy(): Promise<void>;
}

export interface KubectlResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface ApiResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: any;
}

export const kubectlPath = process.env.KUBECTL ?? '/usr/bin/kubectl';

/** Why the real kubectl cannot run here; undefined when it can. */
export const kubectlMissing: string | undefined = (() => {
  try {
    accessSync(kubectlPath, constants.X_OK);
    return undefined;
  } catch {
    return `kubectl not found at ${kubectlPath} (set KUBECTL, or apt-get install kubernetes-client)`;
  }
})();

/**
 * Declares the tests of a file that run the real kubectl (serially). Without kubectl the file gets one
 * skipped test saying so — under CI=true one failing test — and these are not declared.
 */
export function kubectlTests(test: TestFn): (title: string, implementation: Implementation<[]>) => void {
  if (kubectlMissing) {
    if (process.env.CI === 'true') test('kubectl is required in CI (CI=true)', (t) => t.fail(kubectlMissing));
    else test.skip(`${kubectlMissing}; skipping the kubectl tests`, () => undefined);
    return () => undefined;
  }
  return (title, implementation) => test.serial(title, implementation);
}

export async function startCluster(
  options: Partial<ControlPlaneOptions> & { dataDir?: string } = {},
): Promise<TestCluster> {
  const dataDir = options.dataDir ?? (await mkdtemp(join(tmpdir(), 'nodelet-cp-')));
  const logs = new MemorySink();
  const cp = new ControlPlane({
    clock: new RealClock(),
    logger: createLogger({ sink: logs.sink, level: 'debug' }),
    port: 0,
    ...options,
    dataDir,
  });
  await cp.start();
  return clusterHandle(cp, dataDir, logs);
}

/**
 * One cluster shared by a test file's serial kubectl tests: started before them, destroyed after (nothing
 * when kubectl is missing). Returns the cluster, for use inside the tests.
 */
export function fileCluster(test: TestFn, options: Partial<ControlPlaneOptions> = {}): () => TestCluster {
  let c: TestCluster | undefined;
  if (!kubectlMissing) {
    test.before(async () => {
      c = await startCluster(options);
    });
    test.after.always(async () => {
      await c?.destroy();
    });
  }
  return () => c!;
}

export function clusterHandle(cp: ControlPlane, dataDir: string, logs: MemorySink): TestCluster {
  const cacheDir = join(dataDir, 'kubectl-cache');
  const client = admin(cp);
  return {
    cp,
    dataDir,
    logs,
    kubectl: (args, o = {}) =>
      runKubectl(['--kubeconfig', cp.kubeconfigPath, '--cache-dir', cacheDir, ...args], o),
    api: (method, path, body, headers) => client(method, path, body, headers),
    stop: () => cp.stop(),
    destroy: async () => {
      await cp.stop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

export function runKubectl(
  args: string[],
  options: { input?: string; timeoutMs?: number } = {},
): Promise<KubectlResult> {
  return new Promise((resolve) => {
    const child = execFile(
      kubectlPath,
      args,
      {
        timeout: options.timeoutMs ?? 30_000,
        maxBuffer: 64 * 1024 * 1024,
        env: { ...process.env, KUBECONFIG: '' },
      },
      (err, stdout, stderr) => {
        const code = err
          ? typeof (err as { code?: unknown }).code === 'number'
            ? (err as { code: number }).code
            : 1
          : 0;
        resolve({ code, stdout, stderr });
      },
    );
    if (options.input !== undefined) {
      child.stdin?.end(options.input);
    }
  });
}

/** Who a raw request authenticates as: a client certificate, or headers (a bearer token). */
export interface RequestAuth {
  cert?: string;
  key?: string;
  headers?: Record<string, string>;
  agent?: Agent;
}

/** One raw HTTPS request to the control plane; a body that is not a Buffer or string is sent as JSON. */
export function apiRequest(
  cp: ControlPlane,
  auth: RequestAuth,
  method: string,
  path: string,
  body?: unknown,
): Promise<ApiResponse> {
  const payload =
    body === undefined
      ? undefined
      : Buffer.isBuffer(body)
        ? body
        : typeof body === 'string'
          ? Buffer.from(body)
          : Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      new URL(path, cp.url),
      {
        method,
        agent: auth.agent,
        ca: cp.caCert,
        cert: auth.cert,
        key: auth.key,
        headers: {
          accept: 'application/json',
          ...(payload
            ? { 'content-type': 'application/json', 'content-length': String(payload.length) }
            : {}),
          ...auth.headers,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: any;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/** A raw HTTPS client with the admin's client certificate (one keep-alive agent for all its requests). */
export function admin(cp: ControlPlane) {
  let agent: Agent | undefined;
  return (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const { cert, key } = cp.adminCredentials;
    agent ??= new Agent({ keepAlive: true, maxSockets: 32, ca: cp.caCert, cert, key });
    return apiRequest(cp, { cert, key, headers, agent }, method, path, body);
  };
}

/** Polls `check` until it returns a value (not undefined) or `timeoutMs` passes. */
export async function waitFor<T>(
  check: () => T | undefined | Promise<T | undefined>,
  what: string,
  timeoutMs = 10_000,
  everyMs = 25,
): Promise<T> {
  // Real time: these tests drive a real server over HTTPS.
  const clock = new RealClock();
  const deadline = clock.deadline(timeoutMs);
  try {
    for (;;) {
      const value = await check();
      if (value !== undefined) return value;
      if (deadline.expired) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
      await clock.sleep(everyMs);
    }
  } finally {
    deadline.cancel();
  }
}

/** A ready node object as a kubelet would register it. */
export function readyNode(
  name: string,
  options: {
    cpu?: string;
    memory?: string;
    pods?: string;
    labels?: Record<string, string>;
    taints?: object[];
  } = {},
) {
  const resources = { cpu: options.cpu ?? '4', memory: options.memory ?? '8Gi', pods: options.pods ?? '110' };
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name, labels: { 'kubernetes.io/hostname': name, ...(options.labels ?? {}) } },
    spec: options.taints ? { taints: options.taints } : {},
    status: {
      capacity: resources,
      allocatable: resources,
      conditions: [
        {
          type: 'Ready',
          status: 'True',
          reason: 'KubeletReady',
          message: 'kubelet is posting ready status',
          lastHeartbeatTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
          lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
        },
      ],
      addresses: [
        { type: 'InternalIP', address: '10.0.0.10' },
        { type: 'Hostname', address: name },
      ],
      nodeInfo: {
        kubeletVersion: 'v1.34.0',
        osImage: 'nodelet test',
        kernelVersion: '6.1.0',
        containerRuntimeVersion: 'fake://0.1.0',
        operatingSystem: 'linux',
        architecture: 'amd64',
        bootID: '',
        machineID: '',
        systemUUID: '',
        kubeProxyVersion: '',
      },
    },
  };
}

/** The ApiError a registry call throws (the test fails if it throws nothing, or something else). */
export function refusal(f: () => unknown): ApiError {
  try {
    f();
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
  throw new Error('the call was not refused');
}
