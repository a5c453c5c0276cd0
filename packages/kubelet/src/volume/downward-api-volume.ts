import type { Pod, Volume } from '@nodelet/api';
import type { FileProjection, PodFacts, VolumeMountContext, VolumePlugin } from '@nodelet/volume';
import { containerResourceValue, podFieldValue } from '../downward-api.js';
import { checkMode, checkPath, defaultFileMode } from './key-payload.js';
import type { Mounter } from './mounter.js';
import { VolumeError } from './volume-error.js';
import { prepareVolumeDir, writeVolumeFiles } from './written-volume.js';

type DownwardApiFile = NonNullable<NonNullable<Volume['downwardAPI']>['items']>[number];

/**
 * downwardAPI (upstream pkg/volume/downwardapi): files of the pod's own fields — `metadata.name`,
 * `namespace`, `uid`, `labels` and `annotations` (whole maps as `key="value"` lines, or one by
 * `['key']`) — and of its containers' resources (`resourceFieldRef`: limits and requests of cpu,
 * memory, ephemeral-storage, with `divisor`; a limit not set is the node's allocatable). Refreshed on
 * every sync, so a label or annotation edited in the API reaches the file.
 */
export class DownwardApiPlugin implements VolumePlugin {
  readonly name = 'kubernetes.io/downward-api';
  readonly source = 'downwardAPI';
  readonly refresh = true;
  readonly readOnly = true;

  constructor(private readonly mounter: Mounter) {}

  async setUp(ctx: VolumeMountContext): Promise<string> {
    const source = ctx.volume.downwardAPI!;
    const defaultMode = source.defaultMode ?? defaultFileMode;
    checkMode(defaultMode, 'downwardAPI.defaultMode');
    const payload = downwardApiPayload(source.items ?? [], ctx.pod, ctx.facts, defaultMode, 'downwardAPI');
    await prepareVolumeDir(ctx, false, this.mounter);
    await writeVolumeFiles(ctx, payload);
    return ctx.dir;
  }
}

/**
 * The files of downwardAPI items (upstream CollectData, also the projected volume's downwardAPI
 * source). Every item is tried; the errors are reported together, as upstream aggregates them.
 */
export function downwardApiPayload(
  items: DownwardApiFile[],
  pod: Pod,
  facts: PodFacts,
  defaultMode: number,
  field: string,
): Map<string, FileProjection> {
  const payload = new Map<string, FileProjection>();
  const errors: string[] = [];
  items.forEach((item, i) => {
    const at = `${field}.items[${i}]`;
    try {
      checkPath(item.path, `${at}.path`);
      const mode = item.mode ?? defaultMode;
      checkMode(mode, `${at}.mode`);
      payload.set(item.path, { data: itemValue(item, pod, facts, at), mode });
    } catch (err) {
      errors.push((err as Error).message);
    }
  });
  if (errors.length > 0) throw new VolumeError(aggregate(errors));
  return payload;
}

function itemValue(item: DownwardApiFile, pod: Pod, facts: PodFacts, at: string): string {
  if (item.fieldRef) return podFieldValue(pod, item.fieldRef.fieldPath, facts, 'volume');
  const ref = item.resourceFieldRef;
  if (ref) {
    if (!ref.containerName) throw new VolumeError(`${at}.resourceFieldRef.containerName: Required value`);
    return containerResourceValue(pod, ref.containerName, ref.resource, ref.divisor, facts.allocatable);
  }
  throw new VolumeError(`${at}: must specify one of fieldRef, resourceFieldRef`);
}

/** Upstream's utilerrors.NewAggregate: one error as itself, several in brackets. */
export function aggregate(messages: string[]): string {
  return messages.length === 1 ? messages[0]! : `[${messages.join(', ')}]`;
}
