import { existsSync, readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { errorMessage } from '@nodelet/kernel';
import type { KubeconfigSource } from './kubeconfig.js';
import { parseKubeconfigText } from './kubeconfig-text.js';

/**
 * A kubeconfig read without @kubernetes/client-node (whose import costs a second and tens of MiB): the
 * current context's server and credentials, as client-go's `rest.Config`. What it reads: the cluster's
 * `server`, `certificate-authority(-data)`, `insecure-skip-tls-verify` and `tls-server-name`; the
 * user's `client-certificate(-data)`, `client-key(-data)`, `token`, `tokenFile` and
 * `username`/`password`. Relative paths are relative to the kubeconfig's directory.
 *
 * A user with an `exec` credential plugin or an `auth-provider`, or a cluster behind a `proxy-url`,
 * needs client-node: `readRestConfig` says which field (`needsClientNode`), and the caller connects
 * through client-node instead. Errors name the file or flag and what to fix, as `loadKubeConfig`'s do.
 */
export interface RestConfig {
  server: string;
  /** PEM. */
  ca?: string;
  cert?: string;
  key?: string;
  insecureSkipTLSVerify?: boolean;
  tlsServerName?: string;
  token?: string;
  /** Read again at each request (it may be rotated). */
  tokenFile?: string;
  username?: string;
  password?: string;
}

export type RestConfigResult = { config: RestConfig } | { needsClientNode: string };

/** Checks a `--master` URL (upstream's flag): http or https. */
export function checkMaster(master: string): void {
  try {
    const url = new URL(master);
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new Error('not http(s)');
  } catch {
    throw new Error(`--master ${JSON.stringify(master)} is not a URL; write it like https://10.0.0.1:6443`);
  }
}

type Named = { name?: unknown; [field: string]: unknown };

export function readRestConfig(source: string | KubeconfigSource): RestConfigResult {
  const { kubeconfig, master } = typeof source === 'string' ? { kubeconfig: source } : source;
  if (master !== undefined) checkMaster(master);
  if (!kubeconfig) {
    if (master === undefined) throw new Error('an API client needs a kubeconfig or a master URL');
    return { config: { server: master } };
  }
  if (!existsSync(kubeconfig)) throw new Error(`kubeconfig ${kubeconfig}: no such file`);
  let doc: Record<string, unknown>;
  try {
    const parsed: unknown = parseKubeconfigText(readFileSync(kubeconfig, 'utf8'));
    doc = parsed && typeof parsed === 'object' ? (parsed as Record<string, unknown>) : {};
  } catch (err) {
    throw new Error(`kubeconfig ${kubeconfig} could not be loaded: ${errorMessage(err).split('\n')[0]}`);
  }
  const find = (list: string, name: unknown, field: string) => {
    const entries = Array.isArray(doc[list]) ? (doc[list] as Named[]) : [];
    const index = entries.findIndex((e) => e?.name === name);
    const entry = entries[index]?.[field];
    return index < 0 ? undefined : { at: `${list}[${index}].${field}`, value: (entry ?? {}) as Named };
  };
  const context = find('contexts', doc['current-context'], 'context');
  const cluster = context && find('clusters', context.value.cluster, 'cluster');
  if (!cluster) {
    throw new Error(
      `kubeconfig ${kubeconfig} has no current cluster: set current-context to a context whose cluster exists`,
    );
  }
  const user = find('users', context.value.user, 'user')?.value ?? {};
  const userAt = find('users', context.value.user, 'user')?.at;
  for (const field of ['exec', 'auth-provider'])
    if (user[field]) return { needsClientNode: `${userAt}.${field}` };
  if (cluster.value['proxy-url']) return { needsClientNode: `${cluster.at}.proxy-url` };
  const server = master ?? cluster.value.server;
  if (typeof server !== 'string' || !server) {
    throw new Error(
      `kubeconfig ${kubeconfig}: cluster ${JSON.stringify(context.value.cluster)} has no server`,
    );
  }
  try {
    new URL(server);
  } catch {
    throw new Error(`kubeconfig ${kubeconfig}: cluster server ${JSON.stringify(server)} is not a URL`);
  }
  const dir = dirname(kubeconfig);
  const path = (p: unknown) =>
    typeof p === 'string' && p ? (isAbsolute(p) ? p : resolve(dir, p)) : undefined;
  const pem = (data: unknown, file: unknown, at: string): string | undefined => {
    if (typeof data === 'string' && data) return Buffer.from(data, 'base64').toString('utf8');
    const f = path(file);
    if (!f) return undefined;
    try {
      return readFileSync(f, 'utf8');
    } catch (err) {
      throw new Error(`kubeconfig ${kubeconfig}: ${at} ${f} cannot be read: ${errorMessage(err)}`);
    }
  };
  const str = (v: unknown) => (typeof v === 'string' && v ? v : undefined);
  const config: RestConfig = { server };
  const set = <K extends keyof RestConfig>(k: K, v: RestConfig[K] | undefined) => {
    if (v !== undefined) config[k] = v;
  };
  const c = cluster.value;
  set(
    'ca',
    pem(c['certificate-authority-data'], c['certificate-authority'], `${cluster.at}.certificate-authority`),
  );
  if (c['insecure-skip-tls-verify'] === true) config.insecureSkipTLSVerify = true;
  set('tlsServerName', str(c['tls-server-name']));
  set(
    'cert',
    pem(user['client-certificate-data'], user['client-certificate'], `${userAt}.client-certificate`),
  );
  set('key', pem(user['client-key-data'], user['client-key'], `${userAt}.client-key`));
  set('token', str(user.token));
  set('tokenFile', path(user.tokenFile));
  set('username', str(user.username));
  set('password', str(user.password));
  return { config };
}
