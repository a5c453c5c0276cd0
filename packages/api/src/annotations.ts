/**
 * Annotations the kubelet reads and writes on pods (upstream pkg/kubelet/types). The `config.*` keys
 * other than the hash are local: they record how this kubelet came by a pod, so two copies of a pod that
 * differ only in them are the same pod.
 */
export const ConfigHashAnnotation = 'kubernetes.io/config.hash';
/** `file`, `http` or `api`: the source a pod came from. */
export const ConfigSourceAnnotation = 'kubernetes.io/config.source';
/** When this kubelet first saw the pod (RFC 3339). */
export const ConfigSeenAnnotation = 'kubernetes.io/config.seen';
/** Set on a mirror pod: the API server's copy of a static pod; its value is the static pod's hash. */
export const ConfigMirrorAnnotation = 'kubernetes.io/config.mirror';

export const localConfigAnnotations: readonly string[] = [
  ConfigSourceAnnotation,
  ConfigSeenAnnotation,
  ConfigMirrorAnnotation,
];
