import type { Volume } from '@nodelet/api';
import type { VolumeMountContext, VolumePlugin } from '@nodelet/volume';
import { checkMode, defaultFileMode, keyPayload, type ObjectKind, readKeyedObject } from './key-payload.js';
import type { Mounter } from './mounter.js';
import { prepareVolumeDir, writeVolumeFiles } from './written-volume.js';

/**
 * configMap and secret volumes (upstream pkg/volume/configmap, pkg/volume/secret): the object's keys
 * as files (a Secret's decoded), refreshed on every sync of the pod, so an edit of the object reaches
 * the files. An object that does not exist fails the mount with upstream's message (`configmap "x"
 * not found`) unless the source is `optional`, which mounts what there is. Secrets are kept in memory
 * (a tmpfs) where the kubelet can mount one.
 */
abstract class KeyedVolumePlugin implements VolumePlugin {
  abstract readonly name: string;
  abstract readonly source: 'configMap' | 'secret';
  readonly refresh = true;
  protected abstract readonly kind: ObjectKind;
  protected abstract readonly memory: boolean;

  constructor(private readonly mounter: Mounter) {}

  protected abstract objectName(volume: Volume): string;

  async setUp(ctx: VolumeMountContext): Promise<string> {
    const source = ctx.volume[this.source]!;
    const name = this.objectName(ctx.volume);
    const optional = !!source.optional;
    const defaultMode = source.defaultMode ?? defaultFileMode;
    checkMode(defaultMode, `${this.source}.defaultMode`);
    const data = await readKeyedObject(ctx, this.kind, name, optional);
    const payload = keyPayload(
      { kind: this.kind, name, items: source.items, optional, defaultMode, field: this.source },
      data,
    );
    await prepareVolumeDir(ctx, this.memory, this.mounter);
    await writeVolumeFiles(ctx, payload);
    return ctx.dir;
  }
}

export class ConfigMapPlugin extends KeyedVolumePlugin {
  readonly name = 'kubernetes.io/configmap';
  readonly source = 'configMap';
  protected readonly kind = 'configmap';
  protected readonly memory = false;

  protected objectName(volume: Volume): string {
    return volume.configMap?.name ?? '';
  }
}

export class SecretPlugin extends KeyedVolumePlugin {
  readonly name = 'kubernetes.io/secret';
  readonly source = 'secret';
  protected readonly kind = 'secret';
  protected readonly memory = true;

  protected objectName(volume: Volume): string {
    return volume.secret?.secretName ?? '';
  }
}
