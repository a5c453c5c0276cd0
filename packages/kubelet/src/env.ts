import type { Container, Pod } from '@nodelet/api';

/**
 * A container's environment as upstream makes it: `value`, `valueFrom.fieldRef` (the downward API), and
 * `$(VAR)` references expanded in env values, command and args (`$$` escapes a `$`).
 */
export class EnvError extends Error {
  override name = 'EnvError';
}

export interface PodFacts {
  podIP: string;
  hostIP: string;
  nodeName: string;
}

function fieldRef(pod: Pod, path: string, facts: PodFacts): string {
  const meta = pod.metadata ?? {};
  const label = /^metadata\.labels\['(.+)'\]$/.exec(path);
  if (label) return meta.labels?.[label[1]!] ?? '';
  const annotation = /^metadata\.annotations\['(.+)'\]$/.exec(path);
  if (annotation) return meta.annotations?.[annotation[1]!] ?? '';
  switch (path) {
    case 'metadata.name':
      return meta.name ?? '';
    case 'metadata.namespace':
      return meta.namespace ?? 'default';
    case 'metadata.uid':
      return meta.uid ?? '';
    case 'spec.nodeName':
      return facts.nodeName;
    case 'spec.serviceAccountName':
      return pod.spec?.serviceAccountName ?? '';
    case 'status.podIP':
      return facts.podIP;
    case 'status.hostIP':
      return facts.hostIP;
    default:
      throw new EnvError(`fieldRef "${path}" is not supported`);
  }
}

/** Expands `$(NAME)` from `vars`; unknown references stay as written, as upstream. */
export function expand(text: string, vars: ReadonlyMap<string, string>): string {
  return text.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)/g, (match, name: string | undefined) => {
    if (match === '$$') return '$';
    return vars.has(name!) ? vars.get(name!)! : match;
  });
}

export function containerEnv(pod: Pod, container: Container, facts: PodFacts): [string, string][] {
  const vars = new Map<string, string>();
  if (container.envFrom?.length) {
    throw new EnvError(
      `container "${container.name}": envFrom is not supported by the standalone kubelet yet`,
    );
  }
  for (const env of container.env ?? []) {
    let value: string;
    if (env.valueFrom) {
      const from = env.valueFrom;
      if (from.fieldRef) value = fieldRef(pod, from.fieldRef.fieldPath, facts);
      else {
        const kind = Object.keys(from)[0] ?? 'valueFrom';
        throw new EnvError(
          `container "${container.name}": env "${env.name}": valueFrom.${kind} is not supported by the standalone kubelet yet`,
        );
      }
    } else {
      value = expand(env.value ?? '', vars);
    }
    vars.set(env.name, value);
  }
  return [...vars];
}

export function expandCommand(args: string[] | undefined, env: [string, string][]): string[] {
  if (!args) return [];
  const vars = new Map(env);
  return args.map((a) => expand(a, vars));
}
