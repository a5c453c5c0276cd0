// Test support (not part of the package's API): in-memory PodObjects, a pretend mount table, a volume
// manager on a temporary root under virtual time.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ConfigMap, Pod, Secret, TokenRequestSpec, TokenRequestStatus } from '@nodelet/api';
import { createLogger, EventBus, MemorySink, type NodeletEvent, VirtualClock } from '@nodelet/kernel';
import { ObjectNotFoundError, type PodFacts, type PodObjects, type VolumePlugin } from '@nodelet/volume';
import { VolumeManager } from './manager.js';
import { HostMounter } from './mounter.js';

export class MemoryPodObjects implements PodObjects {
  readonly configMaps = new Map<string, ConfigMap>();
  readonly secrets = new Map<string, Secret>();
  readonly tokenRequests: { pod: string; spec: TokenRequestSpec }[] = [];
  token = 'token-1';

  setConfigMap(
    namespace: string,
    name: string,
    data: Record<string, string>,
    binaryData?: Record<string, string>,
  ) {
    this.configMaps.set(`${namespace}/${name}`, {
      metadata: { namespace, name },
      data,
      ...(binaryData ? { binaryData } : {}),
    });
  }

  setSecret(namespace: string, name: string, data: Record<string, string>) {
    const encoded = Object.fromEntries(
      Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
    );
    this.secrets.set(`${namespace}/${name}`, { metadata: { namespace, name }, data: encoded });
  }

  async getConfigMap(namespace: string, name: string): Promise<ConfigMap> {
    const cm = this.configMaps.get(`${namespace}/${name}`);
    if (!cm) throw new ObjectNotFoundError('configmap', namespace, name);
    return cm;
  }

  async getSecret(namespace: string, name: string): Promise<Secret> {
    const s = this.secrets.get(`${namespace}/${name}`);
    if (!s) throw new ObjectNotFoundError('secret', namespace, name);
    return s;
  }

  async getServiceAccountToken(pod: Pod, spec: TokenRequestSpec): Promise<TokenRequestStatus> {
    this.tokenRequests.push({ pod: pod.metadata!.name!, spec });
    return { token: this.token, expirationTimestamp: new Date(Date.UTC(2027, 0, 1)).toISOString() };
  }
}

export const facts: PodFacts = {
  nodeName: 'node-a',
  hostIPs: ['192.0.2.10'],
  podIPs: ['10.88.0.5'],
  allocatable: { cpu: '2', memory: '8Gi', 'ephemeral-storage': '100Gi' },
};

/** A volume manager whose mount(8)/umount(8) are recorded against a pretend mount table. */
export function volumeEnv(
  t: { teardown: (fn: () => void) => void },
  options: { tmpfs?: boolean; plugins?: VolumePlugin[] } = {},
) {
  const root = mkdtempSync(join(tmpdir(), 'nodelet-volumes-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const mounted = new Set<string>();
  const calls: string[] = [];
  const mounter = new HostMounter({
    tmpfs: options.tmpfs ?? false,
    run: async (command, args) => {
      calls.push(`${command} ${args.join(' ')}`);
      const point = args[args.length - 1]!;
      if (command === 'mount') mounted.add(point);
      else mounted.delete(point);
    },
    mountPoints: async () => ['/', '/proc', ...mounted],
  });
  const clock = new VirtualClock(Date.UTC(2026, 11, 1, 10, 20, 30));
  const logs = new MemorySink();
  const logger = createLogger({ sink: logs.sink, level: 'debug', now: () => clock.now() });
  const bus = new EventBus(clock, logger);
  const events: string[] = [];
  bus.events$.subscribe((e: NodeletEvent) => {
    if (e.type === '[Kubelet] Pod Event') events.push(`${e.eventType} ${e.reason} ${e.message}`);
  });
  const objects = new MemoryPodObjects();
  const volumes = new VolumeManager(root, {
    objects,
    facts: () => facts,
    mounter,
    bus,
    clock,
    logger,
    ...(options.plugins ? { plugins: options.plugins } : {}),
  });
  return { root, mounted, calls, volumes, objects, clock, logs, events };
}

export const podWith = (
  volumes: NonNullable<Pod['spec']>['volumes'],
  extra: Partial<NonNullable<Pod['spec']>> = {},
): Pod => ({
  metadata: { name: 'p', namespace: 'default', uid: 'uid-1', labels: { app: 'web' } },
  spec: { containers: [{ name: 'c', image: 'busybox' }], volumes, ...extra },
});
