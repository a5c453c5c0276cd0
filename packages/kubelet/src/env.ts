import {
  type ConfigMap,
  type Container,
  envVarNameErrors,
  type Pod,
  type Secret,
  type Service,
} from '@nodelet/api';
import { ObjectNotFoundError, type PodFacts, type PodObjects } from '@nodelet/volume';
import { containerResourceValue, podFieldValue } from './downward-api.js';
import { expand, mappingFor } from './expansion.js';
import { serviceEnvMap } from './service-env.js';

export { expand } from './expansion.js';

/**
 * A container's environment as upstream's makeEnvironmentVariables makes it (pkg/kubelet/kubelet_pods.go):
 *
 *   1. envFrom, in order: every key of the ConfigMap / Secret (with `prefix`); keys that are no valid
 *      variable name are skipped and reported (InvalidEnvironmentVariableNames)
 *   2. env, in order, replacing what envFrom set: `value` with `$(VAR)` expanded from the variables so
 *      far and the service variables; or `valueFrom` — fieldRef, resourceFieldRef, configMapKeyRef,
 *      secretKeyRef (`optional`: a missing object or key leaves the variable out)
 *   3. the service variables no one set
 *
 * A missing object or key fails the container's start with upstream's message (`configmap "x" not
 * found`, `couldn't find key k in ConfigMap ns/x`): the kubelet reports CreateContainerConfigError and
 * tries again on a later sync.
 */
export class EnvError extends Error {
  override name = 'EnvError';
}

export interface EnvSources {
  objects: PodObjects;
  /** The Services the pod may see; absent for a standalone kubelet, whose pods get no service variables. */
  services?: (pod: Pod) => Promise<Service[]>;
  facts: PodFacts;
  /** Records a Warning event on the pod. */
  warn?: (reason: string, message: string) => void;
}

/** Linux refuses a single `NAME=value` string longer than this at exec (MAX_ARG_STRLEN, with its NUL). */
const maxEnvStringBytes = 128 * 1024;

export async function makeEnvironmentVariables(
  pod: Pod,
  container: Container,
  sources: EnvSources,
): Promise<[string, string][]> {
  const namespace = pod.metadata?.namespace ?? 'default';
  const serviceEnv = sources.services
    ? serviceEnvMap(await sources.services(pod), namespace, pod.spec?.enableServiceLinks !== false)
    : new Map<string, string>();
  const reader = new ObjectReader(sources.objects, namespace);
  const env = new Map<string, string>();
  /** Where each variable came from, for messages. */
  const origin = new Map<string, string>();

  for (const from of container.envFrom ?? []) {
    const ref = from.configMapRef ?? from.secretRef;
    if (!ref) continue;
    const kind = from.configMapRef ? 'configMap' : 'secret';
    const data = from.configMapRef
      ? (await reader.configMap(ref.name!, !!ref.optional))?.data
      : decodeSecretData((await reader.secret(ref.name!, !!ref.optional))?.data);
    if (!data) continue; // optional, and missing
    const invalid: string[] = [];
    for (const [key, value] of Object.entries(data)) {
      const name = (from.prefix ?? '') + key;
      if (envVarNameErrors(name).length > 0) {
        invalid.push(name);
        continue;
      }
      env.set(name, value);
      origin.set(name, `envFrom ${kind} ${namespace}/${ref.name} key "${key}"`);
    }
    if (invalid.length > 0) {
      sources.warn?.(
        'InvalidEnvironmentVariableNames',
        `Keys [${invalid.sort().join(', ')}] from the EnvFrom ${kind} ${namespace}/${ref.name} were skipped since they are considered invalid environment variable names.`,
      );
    }
  }

  const mapping = mappingFor(env, serviceEnv);
  for (const [i, v] of (container.env ?? []).entries()) {
    let value: string | undefined = v.value ?? '';
    if (value === '' && v.valueFrom) value = await valueFrom(pod, container, v, sources, reader);
    else value = expand(value, mapping);
    if (value === undefined) continue; // optional, and missing
    env.set(v.name, value);
    origin.set(v.name, `env[${i}]`);
  }

  for (const [name, value] of serviceEnv) {
    if (env.has(name)) continue;
    env.set(name, value);
    origin.set(name, 'a service link');
  }
  for (const [name, value] of env) {
    const bytes = Buffer.byteLength(name) + 1 + Buffer.byteLength(value) + 1;
    if (bytes > maxEnvStringBytes) {
      throw new EnvError(
        `container "${container.name}": env "${name}" (${origin.get(name)}): the variable is ${bytes} bytes, ` +
          `more than the ${maxEnvStringBytes} bytes Linux passes to a process for one variable`,
      );
    }
  }
  return [...env];
}

/** One `valueFrom` variable; undefined when it is optional and its object or key is missing. */
async function valueFrom(
  pod: Pod,
  container: Container,
  v: NonNullable<Container['env']>[number],
  sources: EnvSources,
  reader: ObjectReader,
): Promise<string | undefined> {
  const from = v.valueFrom!;
  const at = `container "${container.name}": env "${v.name}": valueFrom`;
  try {
    if (from.fieldRef) {
      const { apiVersion, fieldPath } = from.fieldRef;
      if (apiVersion && apiVersion !== 'v1') throw new EnvError(`unsupported pod version: ${apiVersion}`);
      return podFieldValue(pod, fieldPath, sources.facts, 'env');
    }
    if (from.resourceFieldRef) {
      const r = from.resourceFieldRef;
      return containerResourceValue(
        pod,
        r.containerName || container.name,
        r.resource,
        r.divisor,
        sources.facts.allocatable,
      );
    }
  } catch (err) {
    const field = from.fieldRef ? 'fieldRef' : 'resourceFieldRef';
    throw new EnvError(`${at}.${field}: ${(err as Error).message}`);
  }
  if (from.configMapKeyRef) {
    const { name, key, optional } = from.configMapKeyRef;
    const cm = await reader.configMap(name!, !!optional);
    if (!cm) return undefined;
    const value = cm.data?.[key];
    if (value !== undefined) return value;
    if (optional) return undefined;
    throw new EnvError(`couldn't find key ${key} in ConfigMap ${reader.namespace}/${name}`);
  }
  if (from.secretKeyRef) {
    const { name, key, optional } = from.secretKeyRef;
    const secret = await reader.secret(name!, !!optional);
    if (!secret) return undefined;
    const value = secret.data?.[key];
    if (value !== undefined) return Buffer.from(value, 'base64').toString('utf8');
    if (optional) return undefined;
    throw new EnvError(`couldn't find key ${key} in Secret ${reader.namespace}/${name}`);
  }
  const kind = Object.keys(from)[0];
  if (kind) throw new EnvError(`${at}.${kind} is not supported by nodelet`);
  return '';
}

/** The ConfigMaps and Secrets one environment reads, each read once; a missing optional one is undefined. */
class ObjectReader {
  private readonly configMaps = new Map<string, ConfigMap | undefined>();
  private readonly secrets = new Map<string, Secret | undefined>();

  constructor(
    private readonly objects: PodObjects,
    readonly namespace: string,
  ) {}

  configMap(name: string, optional: boolean): Promise<ConfigMap | undefined> {
    return this.read(this.configMaps, name, optional, () => this.objects.getConfigMap(this.namespace, name));
  }

  secret(name: string, optional: boolean): Promise<Secret | undefined> {
    return this.read(this.secrets, name, optional, () => this.objects.getSecret(this.namespace, name));
  }

  private async read<T>(
    seen: Map<string, T | undefined>,
    name: string,
    optional: boolean,
    get: () => Promise<T>,
  ): Promise<T | undefined> {
    if (seen.has(name)) return seen.get(name);
    try {
      const object = await get();
      seen.set(name, object);
      return object;
    } catch (err) {
      // Only "not found" is forgiven, and only for an optional reference.
      if (err instanceof ObjectNotFoundError && optional) return undefined;
      throw err;
    }
  }
}

/** A Secret's `data` (base64 on the wire) as text. */
function decodeSecretData(data: Record<string, string> | undefined): Record<string, string> | undefined {
  if (!data) return undefined;
  return Object.fromEntries(
    Object.entries(data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]),
  );
}

/** Expands `$(VAR)` in a command or its arguments from the container's final environment. */
export function expandCommand(args: string[] | undefined, env: [string, string][]): string[] {
  if (!args) return [];
  const mapping = mappingFor(new Map(env));
  return args.map((a) => expand(a, mapping));
}
