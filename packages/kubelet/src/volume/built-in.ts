import type { VolumePlugin } from '@nodelet/volume';
import { DownwardApiPlugin } from './downward-api-volume.js';
import { EmptyDirPlugin } from './empty-dir.js';
import { HostPathPlugin } from './host-path.js';
import { ConfigMapPlugin, SecretPlugin } from './keyed-volume.js';
import type { Mounter } from './mounter.js';
import { ProjectedPlugin } from './projected.js';

/** The volume sources the kubelet makes itself: emptyDir, hostPath, configMap, secret, downwardAPI, projected. */
export function builtInVolumePlugins(mounter: Mounter): VolumePlugin[] {
  return [
    new EmptyDirPlugin(mounter),
    new HostPathPlugin(),
    new ConfigMapPlugin(mounter),
    new SecretPlugin(mounter),
    new DownwardApiPlugin(mounter),
    new ProjectedPlugin(mounter),
  ];
}
