import { readdir, readFile, stat } from 'node:fs/promises';
import { extname, join } from 'node:path';
import { CniError } from '@nodelet/cni';
import { errorMessage } from '@nodelet/kernel';
import { isVersion, selectVersion, SUPPORTED_VERSIONS } from './version.js';

/** One plugin's configuration object, passed through to the plugin with the runtime's fields added. */
export type PluginConf = Readonly<Record<string, unknown>> & { readonly type: string };

/** A network configuration (list), as the runtime executes it. */
export interface NetworkConfigList {
  readonly name: string;
  /** The version selected for execution (from `cniVersion` and `cniVersions`). */
  readonly cniVersion: string;
  readonly disableCheck: boolean;
  readonly plugins: readonly PluginConf[];
  /** The file it came from. */
  readonly path: string;
}

/** The extensions libcni and containerd read, in their meaning: `.conflist` a list, others one plugin. */
export const CONF_EXTENSIONS: readonly string[] = ['.conflist', '.conf', '.json'];

/** Letters/digits, then letters, digits, `_`, `.`, `-`: container ids and network names (CNI spec). */
export const CNI_NAME = /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/;

/**
 * The network configuration files of `dir`, sorted lexically (byte order, like Go's sort.Strings), or
 * an `Unavailable` CniError when the directory is missing — a CNI daemon may not have written it yet.
 */
export async function listConfFiles(dir: string): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'does not exist' : `cannot be read: ${errorMessage(err)}`;
    throw new CniError('Unavailable', `CNI configuration directory ${dir} ${why}`);
  }
  const files: string[] = [];
  for (const name of names.filter((n) => CONF_EXTENSIONS.includes(extname(n))).sort(byteOrder)) {
    const path = join(dir, name);
    const info = await stat(path).catch(() => undefined); // follows symlinks; dangling ones are skipped
    if (info?.isFile()) files.push(path);
  }
  return files;
}

const byteOrder = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

/**
 * The default network: the lexically first configuration file in `dir`, as libcni's convention (and
 * containerd's and CRI-O's) has it. A broken first file is an error naming it, not a reason to fall
 * through to the next one (which would put pods on a network nobody meant).
 */
export async function loadDefaultNetwork(dir: string): Promise<NetworkConfigList> {
  const files = await listConfFiles(dir);
  if (files.length === 0) {
    throw new CniError(
      'Unavailable',
      `no CNI network configuration in ${dir} (looked for ${CONF_EXTENSIONS.map((e) => `*${e}`).join(', ')})`,
    );
  }
  return loadNetworkFile(files[0]!);
}

/** Reads one `.conflist` (a list) or `.conf`/`.json` (a single plugin, wrapped into a list of one). */
export async function loadNetworkFile(path: string): Promise<NetworkConfigList> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw invalid(path, `cannot be read: ${errorMessage(err)}`);
  }
  return parseNetworkConfig(text, path);
}

export function parseNetworkConfig(text: string, path: string): NetworkConfigList {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw invalid(
      path,
      `not valid JSON${jsonPosition(text, err)}: ${errorMessage(err).replace(/\s+/g, ' ')}`,
    );
  }
  return extname(path) === '.conflist' ? networkFromList(value, path) : networkFromSingle(value, path);
}

/** Validates a parsed configuration list (also how a cached configuration is read back). */
export function networkFromList(value: unknown, path: string): NetworkConfigList {
  if (!isObject(value)) throw invalid(path, 'not a JSON object');
  const name = networkName(value, path);
  const cniVersion = version(value, path);
  const plugins = value.plugins;
  if (!Array.isArray(plugins)) throw invalid(path, 'field "plugins" must be a list of plugin configurations');
  if (plugins.length === 0)
    throw invalid(path, 'field "plugins" is empty; a network needs at least one plugin');
  plugins.forEach((p, i) => pluginConf(p, path, `plugins[${i}]`));
  return {
    name,
    cniVersion,
    disableCheck: flag(value.disableCheck, path, 'disableCheck'),
    plugins: plugins as PluginConf[],
    path,
  };
}

function networkFromSingle(value: unknown, path: string): NetworkConfigList {
  if (!isObject(value)) throw invalid(path, 'not a JSON object');
  if (value.type === undefined && Array.isArray(value.plugins)) {
    throw invalid(path, 'it has a "plugins" list, which belongs in a .conflist file; rename it');
  }
  pluginConf(value, path, '');
  return {
    name: networkName(value, path),
    cniVersion: version(value, path),
    disableCheck: false,
    plugins: [value as PluginConf],
    path,
  };
}

/** The configuration list as JSON, for the cache: executing it again gives the same requests. */
export function toConflist(net: NetworkConfigList): object {
  return { cniVersion: net.cniVersion, name: net.name, disableCheck: net.disableCheck, plugins: net.plugins };
}

function networkName(value: Record<string, unknown>, path: string): string {
  const name = value.name;
  if (typeof name !== 'string' || name === '') throw invalid(path, 'field "name" is required');
  if (!CNI_NAME.test(name)) {
    throw invalid(
      path,
      `network name "${name}" must start with a letter or digit, then letters, digits, "_", "." or "-"`,
    );
  }
  return name;
}

function version(value: Record<string, unknown>, path: string): string {
  const candidates: string[] = [];
  if (value.cniVersion !== undefined) {
    if (!isVersion(value.cniVersion))
      throw invalid(path, `field "cniVersion" must be a version such as "1.0.0"`);
    candidates.push(value.cniVersion);
  }
  if (value.cniVersions !== undefined) {
    if (!Array.isArray(value.cniVersions) || !value.cniVersions.every(isVersion)) {
      throw invalid(path, 'field "cniVersions" must be a list of versions such as "1.0.0"');
    }
    candidates.push(...value.cniVersions);
  }
  if (candidates.length === 0) throw invalid(path, 'field "cniVersion" is required');
  const selected = selectVersion(candidates);
  if (!selected) {
    throw new CniError(
      'FailedPrecondition',
      `CNI network configuration ${path}: CNI version ${candidates.join(', ')} is not supported (nodelet speaks ${SUPPORTED_VERSIONS.join(', ')})`,
      { confPath: path },
    );
  }
  return selected;
}

function pluginConf(value: unknown, path: string, where: string): void {
  const field = (f: string) => (where ? `${where}.${f}` : f);
  if (!isObject(value)) throw invalid(path, `${where || 'the configuration'} is not a JSON object`);
  const type = value.type;
  if (typeof type !== 'string' || type === '') throw invalid(path, `field "${field('type')}" is required`);
  if (!validBinaryName(type))
    throw invalid(path, `field "${field('type')}" ("${type}") must be a file name, not a path`);
  const ipam = value.ipam;
  if (
    isObject(ipam) &&
    ipam.type !== undefined &&
    (typeof ipam.type !== 'string' || !validBinaryName(ipam.type))
  ) {
    throw invalid(path, `field "${field('ipam.type')}" must be a file name, not a path`);
  }
}

const validBinaryName = (s: string) => s !== '.' && s !== '..' && !/[/\\\0]/.test(s);

function flag(value: unknown, path: string, name: string): boolean {
  if (value === undefined) return false;
  if (typeof value === 'boolean') return value;
  if (value === 'true' || value === 'false') return value === 'true';
  throw invalid(path, `field "${name}" must be true or false`);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function invalid(path: string, why: string): CniError {
  return new CniError('FailedPrecondition', `CNI network configuration ${path}: ${why}`, { confPath: path });
}

/** " (line L, column C)" for a JSON.parse error that names a position. */
function jsonPosition(text: string, err: unknown): string {
  const m = /position (\d+)/.exec(errorMessage(err));
  if (!m) return '';
  const before = text.slice(0, Number(m[1]));
  const line = before.split('\n').length;
  const column = before.length - before.lastIndexOf('\n');
  return ` (line ${line}, column ${column})`;
}
