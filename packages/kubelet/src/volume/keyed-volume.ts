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
interface KeyedSource {
  name: string;
  source: 'configMap' | 'secret';
  kind: ObjectKind;
  /** Kept in memory (a tmpfs) where the kubelet can mount one. */
  memory: boolean;
  objectName: (volume: Volume) => string | undefined;
}

class KeyedVolumePlugin implements VolumePlugin {
  readonly name: string;
  readonly source: 'configMap' | 'secret';
  readonly refresh = true;
  readonly readOnly = true;

  constructor(
    private readonly spec: KeyedSource,
    private readonly mounter: Mounter,
  ) {
    this.name = spec.name;
    this.source = spec.source;
  }

  async setUp(ctx: VolumeMountContext): Promise<string> {
    const { kind, source: field } = this.spec;
    const source = ctx.volume[field]!;
    const name = this.spec.objectName(ctx.volume) ?? '';
    const optional = !!source.optional;
    const defaultMode = source.defaultMode ?? defaultFileMode;
    checkMode(defaultMode, `${field}.defaultMode`);
    const data = await readKeyedObject(ctx, kind, name, optional);
    const payload = keyPayload({ kind, name, items: source.items, optional, defaultMode, field }, data);
    await prepareVolumeDir(ctx, this.spec.memory, this.mounter);
    await writeVolumeFiles(ctx, payload);
    return ctx.dir;
  }
}

export class ConfigMapPlugin extends KeyedVolumePlugin {
  constructor(mounter: Mounter) {
    const spec: KeyedSource = {
      name: 'kubernetes.io/configmap',
      source: 'configMap',
      kind: 'configmap',
      memory: false,
      objectName: (v) => v.configMap?.name,
    };
    super(spec, mounter);
  }
}

export class SecretPlugin extends KeyedVolumePlugin {
  constructor(mounter: Mounter) {
    const spec: KeyedSource = {
      name: 'kubernetes.io/secret',
      source: 'secret',
      kind: 'secret',
      memory: true,
      objectName: (v) => v.secret?.secretName,
    };
    super(spec, mounter);
  }
}
