import { createHash } from 'node:crypto';
import {
  applyPodDefaults,
  canonicalJson,
  ConfigHashAnnotation,
  ConfigSeenAnnotation,
  ConfigSourceAnnotation,
  type Pod,
} from '@nodelet/api';

/** Where a static pod came from: a manifest file or a manifest URL. */
export interface StaticPodOrigin {
  source: 'file' | 'http';
  /** The file's path or the URL. */
  origin: string;
  nodeName: string;
  /** Milliseconds since the epoch: the `kubernetes.io/config.seen` time. */
  now: number;
}

/**
 * Gives a pod read from a manifest the identity upstream's kubelet gives static pods
 * (pkg/kubelet/config/common.go), after the defaults an API server would have filled in:
 *
 * - UID, when the manifest has none: hex MD5 over `host:<node>` + `file:<path>` (files) or `url:<url>`
 *   (URLs), followed by the defaulted pod as canonical JSON. Same content → same UID; any change → a new
 *   UID, so an edited manifest replaces the pod rather than updating it.
 * - name `<name>-<node name in lower case>`, namespace `default` when unset, `spec.nodeName` = node;
 * - annotations `kubernetes.io/config.hash` (= UID), `config.source` (`file`/`http`), `config.seen`;
 * - file pods tolerate every NoExecute taint (`operator: Exists`), so node problems never evict them;
 * - `status.phase: Pending`.
 *
 * Returns a new object; the input is not changed.
 */
export function applyStaticPodDefaults(pod: Pod, origin: StaticPodOrigin): Pod {
  const out = applyPodDefaults(pod);
  out.metadata ??= {};
  const metadata = out.metadata;
  if (!metadata.uid) metadata.uid = staticPodUid(out, origin);
  // A nameless pod stays nameless, so validation reports the missing name rather than `-<node>`.
  if (metadata.name) metadata.name = staticPodName(metadata.name, origin.nodeName);
  if (!metadata.namespace) metadata.namespace = 'default';
  out.spec ??= { containers: [] };
  out.spec.nodeName = origin.nodeName;
  metadata.annotations = {
    ...metadata.annotations,
    [ConfigHashAnnotation]: metadata.uid,
    [ConfigSourceAnnotation]: origin.source,
    [ConfigSeenAnnotation]: new Date(origin.now).toISOString(),
  };
  if (origin.source === 'file') addNoExecuteToleration(out);
  out.status = { ...out.status, phase: 'Pending' };
  return out;
}

/** `<name>-<nodeName in lower case>`: unique among nodes, so mirror pods of two nodes never collide. */
export function staticPodName(name: string, nodeName: string): string {
  return `${name}-${nodeName.toLowerCase()}`;
}

/** The UID of a static pod: hex MD5 of where it came from and what it says (see applyStaticPodDefaults). */
export function staticPodUid(
  pod: Pod,
  origin: Pick<StaticPodOrigin, 'source' | 'origin' | 'nodeName'>,
): string {
  const hash = createHash('md5');
  if (origin.source === 'file') {
    hash.update(`host:${origin.nodeName}`);
    hash.update(`file:${origin.origin}`);
  } else {
    hash.update(`url:${origin.origin}`);
  }
  hash.update(canonicalJson(pod));
  return hash.digest('hex');
}

function addNoExecuteToleration(pod: Pod): void {
  const spec = pod.spec!;
  const tolerations = Array.isArray(spec.tolerations) ? spec.tolerations : [];
  const present = tolerations.some(
    (t) => t.operator === 'Exists' && t.effect === 'NoExecute' && !t.key && t.tolerationSeconds == null,
  );
  if (!present) tolerations.push({ operator: 'Exists', effect: 'NoExecute' });
  spec.tolerations = tolerations;
}
