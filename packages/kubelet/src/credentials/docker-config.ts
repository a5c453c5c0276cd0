import type { Secret } from '@nodelet/api';
import type { DockerConfig, RegistryCredential } from './keyring.js';

/** Secret types and keys of image pull secrets (core/v1). */
export const SecretTypeDockerConfigJson = 'kubernetes.io/dockerconfigjson';
export const DockerConfigJsonKey = '.dockerconfigjson';
export const SecretTypeDockercfg = 'kubernetes.io/dockercfg';
export const DockerConfigKey = '.dockercfg';

/** An image pull secret whose content cannot be read; the message names the secret and the field, never a value. */
export class PullSecretError extends Error {
  override name = 'PullSecretError';
}

/**
 * The registry credentials of an image pull secret (upstream credentialprovider/secrets
 * MakeDockerKeyring): a `kubernetes.io/dockerconfigjson` Secret's `.dockerconfigjson`
 * (`{"auths": {"<registry>": {…}}}`), or a `kubernetes.io/dockercfg` Secret's `.dockercfg` (the map
 * itself). Any other Secret, or one whose key is missing or empty, has none (undefined).
 *
 * An entry is read as upstream's DockerConfigEntry: `username`, `password`, `email`, and `auth`,
 * base64 of `username:password`, which wins when present. Like Go's encoding/json, field names match
 * case-insensitively and other fields are ignored — `identitytoken` and `registrytoken` too, as
 * upstream's keyring carries only username and password to the runtime.
 */
export function dockerConfigOfSecret(secret: Secret): DockerConfig | undefined {
  const name = `${secret.metadata?.namespace ?? ''}/${secret.metadata?.name ?? ''}`;
  const fail = (field: string, problem: string) =>
    new PullSecretError(`image pull secret "${secret.metadata?.name ?? ''}": ${field}: ${problem}`);
  const data = secret.data ?? {};
  let key: string;
  if (secret.type === SecretTypeDockerConfigJson && data[DockerConfigJsonKey]) key = DockerConfigJsonKey;
  else if (secret.type === SecretTypeDockercfg && data[DockerConfigKey]) key = DockerConfigKey;
  else return undefined;

  const encoded = data[key]!;
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(encoded) || encoded.length % 4 !== 0)
    throw fail(`data[${key}]`, 'is not base64');
  let doc: unknown;
  try {
    doc = JSON.parse(Buffer.from(encoded, 'base64').toString('utf8'));
  } catch {
    throw fail(key, 'is not valid JSON');
  }
  let entries: unknown = doc;
  let field = key;
  if (key === DockerConfigJsonKey) {
    if (!isObject(doc)) throw fail(key, 'must be an object with "auths"');
    entries = goField(doc, 'auths');
    field = `${key}.auths`;
  }
  if (entries == null) return [];
  if (!isObject(entries)) throw fail(field, 'must be an object of registry entries');
  return Object.entries(entries).map(([location, entry]) => [
    location,
    credentialOf(entry, (f, problem) => fail(`${field}["${location}"]${f}`, problem), name),
  ]);
}

function credentialOf(
  entry: unknown,
  fail: (field: string, problem: string) => PullSecretError,
  source: string,
): RegistryCredential {
  if (entry == null) return { username: '', password: '', source };
  if (!isObject(entry)) throw fail('', 'must be an object');
  const text = (f: string): string => {
    const value = goField(entry, f);
    if (value == null) return '';
    if (typeof value !== 'string') throw fail(`.${f}`, 'must be a string');
    return value;
  };
  let username = text('username');
  let password = text('password');
  const email = text('email');
  const auth = text('auth');
  if (auth !== '') {
    const decoded = decodeAuthField(auth);
    if (typeof decoded === 'string') throw fail('.auth', decoded);
    [username, password] = decoded;
  }
  return { username, password, ...(email && { email }), source };
}

/**
 * Upstream decodeDockerConfigFieldAuth: base64 (padded when it ends in `=`, else unpadded) of
 * `username:password`; a problem is returned as its message.
 */
export function decodeAuthField(field: string): [string, string] | string {
  // Go's base64 decoders skip line breaks.
  const data = field.replace(/[\r\n]/g, '');
  const padded = field.trim().endsWith('=');
  const valid = padded
    ? /^[A-Za-z0-9+/]*={0,2}$/.test(data) && data.length % 4 === 0
    : /^[A-Za-z0-9+/]*$/.test(data) && data.length % 4 !== 1;
  if (!valid) return 'is not base64';
  const decoded = Buffer.from(data, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return 'unable to parse auth field, must be formatted as base64(username:password)';
  return [decoded.slice(0, colon), decoded.slice(colon + 1)];
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A struct field as Go's encoding/json sets it: every key equal to it ignoring case, the last one winning. */
function goField(obj: Record<string, unknown>, name: string): unknown {
  let found: unknown;
  for (const [k, v] of Object.entries(obj)) if (k.toLowerCase() === name) found = v;
  return found;
}
