import { lstat, mkdir, readdir, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Pod, Volume } from '@nodelet/api';
import {
  type Clock,
  createLogger,
  errorMessage,
  type EventBus,
  type Logger,
  RealClock,
} from '@nodelet/kernel';
import { dataDirName, type PodFacts, type PodObjects, type VolumePlugin } from '@nodelet/volume';
import { podRef } from '../image-puller.js';
import { StandalonePodObjects } from '../objects/standalone.js';
import { PrefetchedObjects } from './prefetch.js';
import { builtInVolumePlugins } from './built-in.js';
import { HostMounter, type Mounter } from './mounter.js';
import { podDir, podVolumesDir, pluginDirName, volumeDir, volumeSource } from './paths.js';
import { VolumeError } from './volume-error.js';

/**
 * The kubelet's volume manager (upstream pkg/kubelet/volumemanager, for the volumes a node makes
 * itself): before a pod's containers start, every volume of the pod is set up by the `volume.plugin`
 * provider of its source; plugins that `refresh` (configMap, secret, downwardAPI, projected) are set
 * up again on every sync of the pod, so changed objects and labels reach the files within the sync
 * period. A volume that fails is reported as a `FailedMount` Warning event on the pod
 * (`MountVolume.SetUp failed for volume "<name>" : <why>`); if it was never set up, `setUp` throws and
 * the pod waits in ContainerCreating until a later sync succeeds, while a refresh that fails keeps the
 * content it had. After the pod is gone, `tearDown` removes its directory (plugins' own teardown and
 * any tmpfs first); `removeOrphanedPodDirs` does it for pod directories no pod owns.
 */
export interface VolumeManagerOptions {
  /** The API objects volumes read (default: a standalone kubelet's, which has none). */
  objects?: PodObjects;
  /** What the downward API knows of a pod besides its spec. */
  facts?: (pod: Pod) => PodFacts;
  /** Plugins besides the built-in ones (the `volume.plugin` capability's); one for a built-in source replaces it. */
  plugins?: readonly VolumePlugin[];
  mounter?: Mounter;
  /** Where FailedMount events go (`[Kubelet] Pod Event`). */
  bus?: EventBus;
  clock?: Clock;
  logger?: Logger;
}

export class VolumeManager {
  /** The provider of each volume source. */
  private readonly plugins = new Map<string, VolumePlugin>();
  /** Plugins by their directory name (`kubernetes.io~configmap`), to tear down what is on disk. */
  private readonly byDir = new Map<string, VolumePlugin>();
  /** Host paths of the volumes set up, by pod UID and volume name. */
  private readonly mounted = new Map<string, Map<string, string>>();
  /** Pod directories being removed as orphans: a setUp of that UID waits for it. */
  private readonly removing = new Map<string, Promise<void>>();
  private readonly objects: PodObjects;
  private readonly facts: (pod: Pod) => PodFacts;
  private readonly clock: Clock;
  private readonly logger: Logger;
  readonly mounter: Mounter;

  constructor(
    private readonly rootDir: string,
    private readonly options: VolumeManagerOptions = {},
  ) {
    this.mounter = options.mounter ?? new HostMounter();
    this.objects = options.objects ?? new StandalonePodObjects();
    this.facts = options.facts ?? (() => ({ nodeName: '', hostIPs: [], podIPs: [], allocatable: {} }));
    this.clock = options.clock ?? new RealClock();
    this.logger = options.logger ?? createLogger({ sink: () => {} });
    for (const plugin of builtInVolumePlugins(this.mounter)) this.add(plugin);
    (options.plugins ?? []).forEach((plugin, i) => this.addThirdParty(plugin, i));
  }

  /** The volume sources this kubelet can set up. */
  get sources(): string[] {
    return [...this.plugins.keys()];
  }

  /**
   * Makes every volume of the pod ready on the host; returns host paths by volume name. The objects the
   * volumes read are fetched first (see prefetch.ts), then the files are written as tracked I/O.
   */
  async setUp(pod: Pod): Promise<Map<string, string>> {
    const objects = await PrefetchedObjects.of(pod, this.objects);
    return this.clock.track(this.setUpWith(pod, objects));
  }

  private async setUpWith(pod: Pod, objects: PodObjects): Promise<Map<string, string>> {
    const uid = pod.metadata!.uid!;
    await this.removing.get(uid);
    let known = this.mounted.get(uid);
    if (!known) this.mounted.set(uid, (known = new Map()));
    const facts = this.facts(pod);
    const volumes = pod.spec?.volumes ?? [];
    const outcomes = await Promise.all(
      volumes.map((volume) =>
        this.setUpVolume(pod, volume, known, facts, objects).then(
          (path) => ({ path }),
          (err: unknown) => ({ error: errorMessage(err) }),
        ),
      ),
    );
    const paths = new Map<string, string>();
    const failed: string[] = [];
    for (const [i, outcome] of outcomes.entries()) {
      const volume = volumes[i]!;
      if ('path' in outcome) {
        paths.set(volume.name, outcome.path);
        continue;
      }
      this.podEvent(pod, `MountVolume.SetUp failed for volume "${volume.name}" : ${outcome.error}`);
      const previous = known.get(volume.name) ?? (await this.setUpBefore(pod, volume));
      if (previous === undefined) {
        failed.push(`volume "${volume.name}": ${outcome.error}`);
        continue;
      }
      // Running containers keep what the volume held; the next sync tries again.
      this.logger.warn('Volume refresh failed; keeping its content', {
        pod: podRef(pod),
        volume: volume.name,
        err: outcome.error,
      });
      paths.set(volume.name, previous);
    }
    if (failed.length > 0) throw new VolumeError(failed.join('; '));
    return paths;
  }

  /** The pod's volumes that containers mount read-only whatever they ask (the plugin says so). */
  readOnlyVolumes(pod: Pod): Set<string> {
    const names = new Set<string>();
    for (const volume of pod.spec?.volumes ?? []) {
      if (this.plugins.get(volumeSource(volume))?.readOnly) names.add(volume.name);
    }
    return names;
  }

  /** Unmounts the pod's volumes and removes its directory (emptyDir content goes with the pod). */
  async tearDown(uid: string): Promise<void> {
    await this.tearDownVolumes(uid);
    const dir = podDir(this.rootDir, uid);
    await this.mounter.unmountUnder(dir);
    await rm(dir, { recursive: true, force: true });
  }

  /**
   * Unmounts and removes the pod's volumes, keeping its directory: a pod that will not run again (evicted)
   * gives back what its emptyDirs hold while it is still known, as upstream's volume manager does for a
   * terminated pod.
   */
  async tearDownVolumes(uid: string): Promise<void> {
    const volumes = podVolumesDir(this.rootDir, uid);
    for (const pluginDir of await entries(volumes)) {
      const plugin = this.byDir.get(pluginDir);
      if (!plugin?.tearDown) continue;
      for (const volumeName of await entries(join(volumes, pluginDir))) {
        const dir = join(volumes, pluginDir, volumeName);
        try {
          await plugin.tearDown({ podUid: uid, volumeName, dir, logger: this.logger });
        } catch (err) {
          throw new VolumeError(`volume "${volumeName}" of pod ${uid}: tearDown: ${errorMessage(err)}`);
        }
      }
    }
    await this.mounter.unmountUnder(volumes);
    await rm(volumes, { recursive: true, force: true });
    this.mounted.delete(uid);
  }

  /**
   * Removes the directories under `<root>/pods/` of pods the kubelet does not know (deleted while it
   * was down, or whose cleanup was interrupted) — never one whose UID `wanted` knows or whose volumes
   * this kubelet set up and has not torn down. Housekeeping calls it once every source has been seen.
   */
  removeOrphanedPodDirs(wanted: (uid: string) => boolean): Promise<void> {
    return this.clock.track(this.removeOrphans(wanted)); // real I/O: virtual time waits for it
  }

  private async removeOrphans(wanted: (uid: string) => boolean): Promise<void> {
    for (const uid of await entries(join(this.rootDir, 'pods'))) {
      if (wanted(uid) || this.mounted.has(uid) || this.removing.has(uid)) continue;
      this.logger.info('Cleaning up orphaned pod directory', {
        podUID: uid,
        path: podDir(this.rootDir, uid),
      });
      const removal = this.tearDown(uid).finally(() => this.removing.delete(uid));
      this.removing.set(uid, removal);
      await removal;
    }
  }

  private async setUpVolume(
    pod: Pod,
    volume: Volume,
    known: Map<string, string>,
    facts: PodFacts,
    objects: PodObjects,
  ): Promise<string> {
    const plugin = this.pluginFor(volume);
    const had = known.get(volume.name);
    if (had !== undefined && !plugin.refresh) return had;
    const dir = volumeDir(this.rootDir, pod.metadata!.uid!, plugin.name, volume.name);
    if (had === undefined) await makeVolumeDir(dir);
    const path = await plugin.setUp({
      pod,
      volume,
      dir,
      facts,
      objects,
      ...(pod.spec?.securityContext?.fsGroup !== undefined
        ? { fsGroup: pod.spec.securityContext.fsGroup }
        : {}),
      refreshing: had !== undefined,
      clock: this.clock,
      logger: this.logger,
    });
    known.set(volume.name, path);
    return path;
  }

  private pluginFor(volume: Volume): VolumePlugin {
    const source = volumeSource(volume);
    const plugin = this.plugins.get(source);
    if (!plugin) {
      throw new VolumeError(
        `source "${source}" is not supported by nodelet (supported: ${this.sources.join(', ')})`,
      );
    }
    return plugin;
  }

  /**
   * A refreshed volume's directory when an earlier kubelet set it up (its `..data` is there): after a
   * restart, a running pod keeps it even if its object is gone now.
   */
  private async setUpBefore(pod: Pod, volume: Volume): Promise<string | undefined> {
    const plugin = this.plugins.get(volumeSource(volume));
    if (!plugin?.refresh) return undefined;
    const dir = volumeDir(this.rootDir, pod.metadata!.uid!, plugin.name, volume.name);
    return (await lstat(join(dir, dataDirName)).catch(() => undefined)) ? dir : undefined;
  }

  private podEvent(pod: Pod, message: string): void {
    const meta = pod.metadata!;
    this.options.bus?.emit('[Kubelet] Pod Event', {
      podUid: meta.uid!,
      podName: meta.name!,
      namespace: meta.namespace ?? 'default',
      eventType: 'Warning',
      reason: 'FailedMount',
      message,
    });
  }

  private add(plugin: VolumePlugin): void {
    this.plugins.set(plugin.source, plugin);
    this.byDir.set(pluginDirName(plugin.name), plugin);
  }

  private addThirdParty(plugin: VolumePlugin, i: number): void {
    for (const field of ['name', 'source'] as const) {
      if (typeof plugin[field] !== 'string' || plugin[field] === '') {
        throw new VolumeError(`volume plugin #${i}: field "${field}" must be a non-empty string`);
      }
    }
    if (typeof plugin.setUp !== 'function') {
      throw new VolumeError(`volume plugin "${plugin.name}": field "setUp" must be a function`);
    }
    const replaced = this.plugins.get(plugin.source);
    if (replaced) {
      this.logger.info('A plugin provides a volume source, replacing the one before it', {
        source: plugin.source,
        plugin: plugin.name,
        replaced: replaced.name,
      });
      this.byDir.delete(pluginDirName(replaced.name));
    }
    this.add(plugin);
  }
}

/** `<root>/pods/<uid>/volumes/<plugin>/` (0750) and the volume's own directory, 0700 until its plugin says more. */
async function makeVolumeDir(dir: string): Promise<void> {
  await mkdir(dirname(dir), { recursive: true, mode: 0o750 });
  await mkdir(dir, { mode: 0o700 }).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'EEXIST') throw err;
  });
}

async function entries(dir: string): Promise<string[]> {
  return readdir(dir).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT' || err.code === 'ENOTDIR') return [];
    throw err;
  });
}
