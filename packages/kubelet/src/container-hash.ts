import { createHash } from 'node:crypto';
import { canonicalJson, type Container } from '@nodelet/api';

/**
 * A stable hash of a container's spec, stored on the runtime container as an annotation. When the spec
 * changes (a new image, new args) the hash changes and the kubelet replaces the container, as upstream's
 * HashContainer does. Keys are sorted so the hash does not depend on field order in the manifest.
 */
export function hashContainer(container: Container): string {
  return createHash('sha256').update(canonicalJson(container)).digest('hex').slice(0, 16);
}
