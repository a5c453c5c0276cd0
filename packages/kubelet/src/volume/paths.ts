import { join } from 'node:path';
import type { Volume } from '@nodelet/api';

/**
 * Where a pod's volumes live under the kubelet root, as upstream lays them out:
 * `<root>/pods/<uid>/volumes/<plugin name with / as ~>/<volume name>`, e.g.
 * `kubernetes.io~configmap/config`.
 */
export function podDir(rootDir: string, uid: string): string {
  return join(rootDir, 'pods', uid);
}

export function podVolumesDir(rootDir: string, uid: string): string {
  return join(podDir(rootDir, uid), 'volumes');
}

/** Upstream EscapeQualifiedName: `kubernetes.io/configmap` → `kubernetes.io~configmap`. */
export function pluginDirName(pluginName: string): string {
  return pluginName.replaceAll('/', '~');
}

export function volumeDir(rootDir: string, uid: string, pluginName: string, volumeName: string): string {
  return join(podVolumesDir(rootDir, uid), pluginDirName(pluginName), volumeName);
}

export function emptyDirPath(rootDir: string, uid: string, name: string): string {
  return volumeDir(rootDir, uid, 'kubernetes.io/empty-dir', name);
}

/** The source field of a volume (`emptyDir`, `hostPath`, `configMap`, …). */
export function volumeSource(volume: Volume): string {
  return (
    Object.keys(volume).find(
      (k) =>
        k !== 'name' &&
        (volume as Record<string, unknown>)[k] !== undefined &&
        (volume as Record<string, unknown>)[k] !== null,
    ) ?? '(none)'
  );
}
