import { type Container, goQuote, milliCpu, type Pod, quantityValue } from '@nodelet/api';
import type { PodFacts } from '@nodelet/volume';

/**
 * The downward API's values (upstream pkg/fieldpath and pkg/api/v1/resource): a pod field by its path,
 * for env `fieldRef` and downwardAPI volume items, and a container's resource by name with a divisor,
 * for `resourceFieldRef`. One module, so an env var and a volume file of the same field agree.
 */
export class DownwardApiError extends Error {
  override name = 'DownwardApiError';
}

/** Where a field may be read: env vars allow more fields than volume files, volume files whole maps. */
export type FieldUse = 'env' | 'volume';

const subscript = /^metadata\.(labels|annotations)\['(.+)'\]$/;

/** The value of `fieldPath` for this pod, as upstream formats it. */
export function podFieldValue(pod: Pod, fieldPath: string, facts: PodFacts, use: FieldUse): string {
  const meta = pod.metadata ?? {};
  const one = subscript.exec(fieldPath);
  if (one) return (one[1] === 'labels' ? meta.labels : meta.annotations)?.[one[2]!] ?? '';
  switch (fieldPath) {
    case 'metadata.name':
      return meta.name ?? '';
    case 'metadata.namespace':
      return meta.namespace ?? 'default';
    case 'metadata.uid':
      return meta.uid ?? '';
    case 'metadata.labels':
    case 'metadata.annotations':
      if (use === 'volume')
        return formatMap(fieldPath === 'metadata.labels' ? meta.labels : meta.annotations);
      break;
  }
  if (use === 'env') {
    switch (fieldPath) {
      case 'spec.nodeName':
        return facts.nodeName;
      case 'spec.serviceAccountName':
        return pod.spec?.serviceAccountName ?? '';
      case 'status.hostIP':
        return facts.hostIPs[0] ?? '';
      case 'status.hostIPs':
        return facts.hostIPs.join(',');
      case 'status.podIP':
        return facts.podIPs[0] ?? '';
      case 'status.podIPs':
        return facts.podIPs.join(',');
    }
  }
  throw new DownwardApiError(
    `fieldPath "${fieldPath}" is not supported in ${use === 'env' ? 'an env var' : 'a downwardAPI volume'}` +
      ` (supported: ${supportedFields(use).join(', ')})`,
  );
}

export function supportedFields(use: FieldUse): string[] {
  const common = [
    'metadata.name',
    'metadata.namespace',
    'metadata.uid',
    "metadata.labels['<key>']",
    "metadata.annotations['<key>']",
  ];
  return use === 'volume'
    ? [...common, 'metadata.labels', 'metadata.annotations']
    : [
        ...common,
        'spec.nodeName',
        'spec.serviceAccountName',
        'status.hostIP',
        'status.hostIPs',
        'status.podIP',
        'status.podIPs',
      ];
}

/** Upstream FormatMap: `key="value"` lines in key order, values quoted as Go's %q does. */
export function formatMap(map: Record<string, string> | undefined): string {
  return Object.keys(map ?? {})
    .sort()
    .map((k) => `${k}=${goQuote(map![k]!)}`)
    .join('\n');
}

const resources = ['cpu', 'memory', 'ephemeral-storage'] as const;

/**
 * A container's resource for `resourceFieldRef` (`limits.cpu`, `requests.memory`, …), divided by
 * `divisor` (default 1) and rounded up, as upstream's ExtractContainerResourceValue. Limits the container
 * does not set are the node's allocatable, as upstream's MergeContainerResourceLimits makes them.
 */
export function containerResourceValue(
  pod: Pod,
  containerName: string,
  resource: string,
  divisor: string | number | undefined,
  allocatable: Record<string, string>,
): string {
  const container = findContainer(pod, containerName);
  const m = /^(limits|requests)\.(.+)$/.exec(resource);
  const name = m?.[2] as (typeof resources)[number] | undefined;
  if (!m || !name || !resources.includes(name)) {
    throw new DownwardApiError(
      `resourceFieldRef: resource "${resource}" is not supported (supported: ${resources
        .flatMap((r) => [`limits.${r}`, `requests.${r}`])
        .join(', ')})`,
    );
  }
  let quantity: string | number | undefined =
    m[1] === 'limits' ? container.resources?.limits?.[name] : container.resources?.requests?.[name];
  if (m[1] === 'limits' && (quantity === undefined || quantity === '')) quantity = allocatable[name];
  const divide = divisor === undefined || divisor === '' ? 1 : divisor;
  try {
    if (name === 'cpu') {
      const d = milliCpu(divide);
      if (d <= 0) throw new DownwardApiError(`resourceFieldRef: divisor "${divisor}" must be positive`);
      return String(Math.ceil(milliCpu(quantity ?? 0) / d));
    }
    const d = quantityValue(divide);
    if (d <= 0) throw new DownwardApiError(`resourceFieldRef: divisor "${divisor}" must be positive`);
    return String(Math.ceil(quantityValue(quantity ?? 0) / d));
  } catch (err) {
    if (err instanceof DownwardApiError) throw err;
    throw new DownwardApiError(`resourceFieldRef "${resource}": ${(err as Error).message}`);
  }
}

function findContainer(pod: Pod, name: string): Container {
  const spec = pod.spec;
  const container = [...(spec?.containers ?? []), ...(spec?.initContainers ?? [])].find(
    (c) => c.name === name,
  );
  if (!container) {
    throw new DownwardApiError(`resourceFieldRef: the pod has no container "${name}"`);
  }
  return container;
}
