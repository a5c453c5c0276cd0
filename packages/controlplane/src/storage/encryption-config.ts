import { list, mapping, parseConfigDocument, readConfigFile, type Fail } from '../config-document.js';
import {
  aescbcProvider,
  aesgcmProvider,
  identityProvider,
  ProviderChain,
  type ValueTransformer,
} from './value-transformers.js';

/**
 * kube-apiserver's `--encryption-provider-config`: an `apiserver.config.k8s.io/v1` EncryptionConfiguration
 * naming, per group of resources, the providers that encrypt them at rest:
 *
 *   resources:
 *     - resources: [secrets]            # `resource` (core), `resource.group`, `*.group`, `*.` or `*.*`
 *       providers:
 *         - aesgcm: {keys: [{name: key2, secret: <base64 of 16, 24 or 32 bytes>}]}
 *         - aescbc: {keys: [{name: key1, secret: …}]}
 *         - identity: {}
 *
 * The first provider's first key writes; every key of every provider reads, by the prefix of the value.
 * The file is checked whole before anything starts; errors name the file and the field. secretbox and
 * kms are upstream providers nodelet does not implement: they are refused by name.
 */
export class EncryptionConfig {
  private constructor(private readonly rules: readonly { patterns: string[]; chain: ValueTransformer }[]) {}

  static async load(path: string): Promise<EncryptionConfig> {
    return EncryptionConfig.parse(await readConfigFile(path, 'encryption configuration'), path);
  }

  static parse(text: string, path = 'encryption configuration'): EncryptionConfig {
    const { root, fail } = parseConfigDocument(text, path, {
      apiVersion: 'apiserver.config.k8s.io/v1',
      kind: 'EncryptionConfiguration',
    });
    const entries = list(root.resources, 'resources', fail);
    if (entries.length === 0) fail('resources', 'at least one entry is required');
    const seen = new Set<string>();
    const rules = entries.map((raw, i) => {
      const at = `resources[${i}]`;
      const entry = mapping(raw, at, fail);
      const patterns = list(entry.resources, `${at}.resources`, fail).map((r, j) => {
        if (typeof r !== 'string' || r === '')
          return fail(`${at}.resources[${j}]`, 'must be a resource name');
        const pattern = r.toLowerCase();
        if (seen.has(pattern)) fail(`${at}.resources[${j}]`, `${r} is already listed in an earlier entry`);
        seen.add(pattern);
        return pattern;
      });
      if (patterns.length === 0) fail(`${at}.resources`, 'at least one resource is required');
      const providers = list(entry.providers, `${at}.providers`, fail);
      if (providers.length === 0) fail(`${at}.providers`, 'at least one provider is required');
      const chain = providers.flatMap((p, j) => providerKeys(p, `${at}.providers[${j}]`, fail));
      return { patterns, chain: new ProviderChain(chain) };
    });
    return new EncryptionConfig(rules);
  }

  /**
   * The store's view: the transformer of a storage resource name, by the group and resource of the
   * served types kept under it (core and events.k8s.io Events share one).
   */
  forStorage(types: readonly { storage: string; group: string; plural: string }[]) {
    return (storage: string): ValueTransformer | undefined => {
      for (const t of types) {
        const transformer = t.storage === storage ? this.transformerFor(t.group, t.plural) : undefined;
        if (transformer) return transformer;
      }
      return undefined;
    };
  }

  /** The transformer of a resource (`secrets` and group `` for Secrets), or undefined: stored as is. */
  transformerFor(group: string, resource: string): ValueTransformer | undefined {
    const candidates = [
      `${resource}${group ? `.${group}` : ''}`,
      `${resource}.${group}`,
      `*.${group}`,
      '*.*',
    ];
    return this.rules.find((rule) => rule.patterns.some((p) => candidates.includes(p)))?.chain;
  }
}

const keyedProviders = {
  aescbc: aescbcProvider,
  aesgcm: aesgcmProvider,
};
const unsupported = ['secretbox', 'kms'];

function providerKeys(raw: unknown, at: string, fail: Fail) {
  const element = mapping(raw, at, fail);
  const kinds = Object.keys(element);
  if (kinds.length !== 1)
    fail(at, `name exactly one provider per list element (aescbc, aesgcm or identity), got ${kinds.length}`);
  const kind = kinds[0]!;
  if (kind === 'identity') return [identityProvider()];
  if (unsupported.includes(kind))
    fail(`${at}.${kind}`, `provider ${kind} is not supported; use aesgcm or aescbc`);
  const make = keyedProviders[kind as keyof typeof keyedProviders];
  if (!make) return fail(`${at}.${kind}`, 'unknown provider: use aescbc, aesgcm or identity');
  const body = mapping(element[kind], `${at}.${kind}`, fail);
  const keys = list(body.keys, `${at}.${kind}.keys`, fail);
  if (keys.length === 0) fail(`${at}.${kind}.keys`, 'at least one key is required');
  const names = new Set<string>();
  return keys.map((k, n) => {
    const field = `${at}.${kind}.keys[${n}]`;
    const key = mapping(k, field, fail);
    if (typeof key.name !== 'string' || key.name === '') fail(`${field}.name`, 'is required');
    const name = key.name as string;
    if (name.includes(':')) fail(`${field}.name`, `must not contain ':', got ${JSON.stringify(name)}`);
    if (names.has(name)) fail(`${field}.name`, `${name} is already a key of this provider`);
    names.add(name);
    if (typeof key.secret !== 'string' || key.secret === '') fail(`${field}.secret`, 'is required');
    const text = (key.secret as string).trim();
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(text) || text.length % 4 !== 0)
      fail(`${field}.secret`, 'must be base64-encoded (e.g. head -c 32 /dev/urandom | base64)');
    const secret = Buffer.from(text, 'base64');
    if (![16, 24, 32].includes(secret.length))
      fail(`${field}.secret`, `must decode to 16, 24 or 32 bytes for ${kind}, got ${secret.length}`);
    return make(name, secret);
  });
}
