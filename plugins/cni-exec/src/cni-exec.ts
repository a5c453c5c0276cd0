import { stat } from 'node:fs/promises';
import {
  CniError,
  type CniCommand,
  type CniErrorBody,
  type CniNetwork,
  type NetworkStatus,
  type PodNetworkRequest,
  type PodNetworkStatus,
  kernelCodeForCniCode,
} from '@nodelet/cni';
import { createLogger, errorMessage, isErrorCode, type Logger } from '@nodelet/kernel';
import { type CniExecConfig, DEFAULT_CONFIG } from './config.js';
import { execPlugin, type ExecOutcome, type ExecRequest, findPlugin } from './invoke.js';
import {
  CNI_NAME,
  loadDefaultNetwork,
  type NetworkConfigList,
  networkFromList,
  type PluginConf,
  toConflist,
} from './network-config.js';
import { parseResult, toPodNetworkStatus } from './result.js';
import { CACHE_KIND, type CachedAttachment, ResultCache } from './result-cache.js';
import { atLeast } from './version.js';

export interface CniExecOptions extends Partial<CniExecConfig> {
  logger?: Logger;
  /** Runs one plugin; tests may wrap it. Default `execPlugin`. */
  exec?: (req: ExecRequest) => Promise<ExecOutcome>;
}

/** The per-attachment parameters of the CNI spec, derived from a request. */
interface Attachment {
  readonly containerId: string;
  readonly ifName: string;
  readonly netns: string;
  readonly cniArgs: string;
  readonly capabilityArgs: Readonly<Record<string, unknown>>;
  readonly pod: string;
}

/** The binary resolved for each plugin of a network, in list order. */
type Resolved = readonly { readonly plugin: PluginConf; readonly binary: string }[];

/**
 * `cni.network` by executing CNI plugin binaries, as libcni does for containerd and CRI-O:
 *
 *   setUpPod    ADD   every plugin in list order; each gets the previous one's result as prevResult;
 *                     the final result is cached with the configuration. On failure: DEL, then throw.
 *   checkPod    CHECK every plugin in list order, prevResult = the cached final result.
 *   tearDownPod DEL   every plugin in reverse order, prevResult = the cached final result; cache removed.
 *
 * The network is the lexically first configuration in `confDir`, read on every call (a CNI daemon may
 * write or replace it at any time); DEL and CHECK use the configuration cached at ADD.
 */
export class CniExec implements CniNetwork {
  readonly config: CniExecConfig;
  private readonly cache: ResultCache;
  private readonly logger: Logger;
  private readonly exec: (req: ExecRequest) => Promise<ExecOutcome>;
  private readonly locks = new Map<string, Promise<void>>();
  private readonly versions = new Map<string, { stamp: string; supported: readonly string[] }>();

  constructor(options: CniExecOptions = {}) {
    this.config = {
      confDir: options.confDir ?? DEFAULT_CONFIG.confDir,
      binDirs: [...(options.binDirs ?? DEFAULT_CONFIG.binDirs)],
      cacheDir: options.cacheDir ?? DEFAULT_CONFIG.cacheDir,
      execTimeoutMs: options.execTimeoutMs ?? DEFAULT_CONFIG.execTimeoutMs,
    };
    this.cache = new ResultCache(this.config.cacheDir);
    this.logger = options.logger ?? createLogger({ component: 'cni-exec' });
    this.exec = options.exec ?? execPlugin;
  }

  async setUpPod(req: PodNetworkRequest): Promise<PodNetworkStatus> {
    const a = attachment(req, 'ADD');
    return this.serialize(a.containerId, () => this.add(a));
  }

  async tearDownPod(req: PodNetworkRequest): Promise<void> {
    const a = attachment(req, 'DEL');
    return this.serialize(a.containerId, () => this.del(a));
  }

  async checkPod(req: PodNetworkRequest): Promise<void> {
    const a = attachment(req, 'CHECK');
    return this.serialize(a.containerId, () => this.check(a));
  }

  async status(): Promise<NetworkStatus> {
    let net: NetworkConfigList;
    let resolved: Resolved;
    try {
      net = await loadDefaultNetwork(this.config.confDir);
      resolved = await this.resolve(net, true);
    } catch (err) {
      return { ready: false, message: errorMessage(err) };
    }
    for (const { plugin, binary } of resolved) {
      let supported: readonly string[];
      try {
        supported = await this.supportedVersions(net, plugin, binary);
      } catch (err) {
        return { ready: false, message: errorMessage(err) };
      }
      if (!supported.includes(net.cniVersion)) {
        return {
          ready: false,
          message: `${where(plugin.type, net)} does not support CNI version ${net.cniVersion} (it supports ${supported.join(', ') || 'none'})`,
        };
      }
    }
    return {
      ready: true,
      message: `network "${net.name}" (CNI ${net.cniVersion}) from ${net.path}: plugins ${net.plugins.map((p) => p.type).join(', ')}`,
    };
  }

  // ---- the three operations ------------------------------------------------------------------------

  private async add(a: Attachment): Promise<PodNetworkStatus> {
    const existing = await this.cache.read(a.containerId, a.ifName).catch((err: unknown) => {
      this.logger.warn('ignoring an unreadable cached CNI result', { pod: a.pod, err: errorMessage(err) });
      return undefined;
    });
    if (existing) {
      throw new CniError(
        'AlreadyExists',
        `the network of pod ${a.pod} (container ${a.containerId}, interface ${a.ifName}) is already set up on network "${existing.networkName}"; tear it down first`,
        { network: existing.networkName, confPath: existing.confPath, command: 'ADD' },
      );
    }
    const net = await loadDefaultNetwork(this.config.confDir);
    const resolved = await this.resolve(net, false);
    let prevResult: unknown;
    for (const { plugin, binary } of resolved) {
      try {
        prevResult = await this.run(net, plugin, binary, 'ADD', a, prevResult);
      } catch (err) {
        await this.rollback(net, resolved, a, err);
        throw err;
      }
    }
    const result = parseResult(prevResult, net.cniVersion); // run() checked it already
    try {
      await this.cache.write({
        kind: CACHE_KIND,
        containerId: a.containerId,
        ifName: a.ifName,
        networkName: net.name,
        confPath: net.path,
        config: toConflist(net),
        netns: a.netns,
        cniArgs: a.cniArgs,
        capabilityArgs: a.capabilityArgs,
        result: prevResult,
      });
    } catch (err) {
      await this.rollback(net, resolved, a, err);
      throw new CniError(
        'Internal',
        `cannot cache the CNI result of pod ${a.pod} in ${this.config.cacheDir}: ${errorMessage(err)}`,
        { network: net.name, confPath: net.path, command: 'ADD' },
        { cause: err },
      );
    }
    const status = toPodNetworkStatus(net.name, result, a.ifName);
    this.logger.debug('pod network set up', { pod: a.pod, network: net.name, ips: status.ips.join(',') });
    return status;
  }

  private async del(a: Attachment): Promise<void> {
    let cached = await this.cache.read(a.containerId, a.ifName).catch((err: unknown) => {
      this.logger.warn('ignoring an unreadable cached CNI result', { pod: a.pod, err: errorMessage(err) });
      return undefined;
    });
    let net = cached ? this.cachedNetwork(cached, a) : undefined;
    if (!net) {
      cached = undefined;
      try {
        net = await loadDefaultNetwork(this.config.confDir);
      } catch (err) {
        if (!isErrorCode(err, 'Unavailable')) throw err;
        // Nothing was set up through this node's cache, and no network is configured to ask.
        this.logger.warn('nothing to tear down: no cached CNI result and no network configuration', {
          pod: a.pod,
          reason: errorMessage(err),
        });
        return;
      }
    }
    const netns = await this.existingNetns(a.netns || cached?.netns || '');
    const prevResult = cached && atLeast(net.cniVersion, '0.4.0') ? cached.result : undefined;
    const resolved = await this.resolve(net, false);
    for (const { plugin, binary } of [...resolved].reverse()) {
      await this.run(net, plugin, binary, 'DEL', { ...a, netns }, prevResult);
    }
    await this.cache.remove(a.containerId, a.ifName);
    this.logger.debug('pod network torn down', { pod: a.pod, network: net.name });
  }

  private async check(a: Attachment): Promise<void> {
    let cached: CachedAttachment | undefined;
    try {
      cached = await this.cache.read(a.containerId, a.ifName);
    } catch (err) {
      throw new CniError('Internal', errorMessage(err), { command: 'CHECK' }, { cause: err });
    }
    if (!cached) {
      throw new CniError(
        'NotFound',
        `the network of pod ${a.pod} (container ${a.containerId}, interface ${a.ifName}) is not set up: no cached ADD result in ${this.config.cacheDir}`,
        { command: 'CHECK' },
      );
    }
    const net = networkFromList(cached.config, cached.confPath);
    if (!atLeast(net.cniVersion, '0.4.0')) {
      throw new CniError(
        'Unimplemented',
        `network "${net.name}" in ${net.path} uses CNI ${net.cniVersion}; CHECK needs 0.4.0 or later`,
        { network: net.name, confPath: net.path, command: 'CHECK' },
      );
    }
    if (net.disableCheck) return;
    const resolved = await this.resolve(net, false);
    for (const { plugin, binary } of resolved) {
      await this.run(net, plugin, binary, 'CHECK', a, cached.result);
    }
  }

  // ---- helpers -------------------------------------------------------------------------------------

  /** Deletes what a failed ADD may have left (the spec: a delete follows every add, even a failed one). */
  private async rollback(
    net: NetworkConfigList,
    resolved: Resolved,
    a: Attachment,
    cause: unknown,
  ): Promise<void> {
    this.logger.warn('CNI ADD failed; deleting the partial pod network', {
      pod: a.pod,
      err: errorMessage(cause),
    });
    for (const { plugin, binary } of [...resolved].reverse()) {
      try {
        await this.run(net, plugin, binary, 'DEL', a, undefined);
      } catch (err) {
        this.logger.warn('CNI DEL after a failed ADD failed too', { pod: a.pod, err: errorMessage(err) });
      }
    }
  }

  /**
   * Runs one plugin for one command. ADD resolves to the plugin's result (parsed JSON, checked); other
   * commands to undefined. Failures become CniErrors naming the plugin, network and file.
   */
  private async run(
    net: NetworkConfigList,
    plugin: PluginConf,
    binary: string,
    command: CniCommand,
    a: Attachment,
    prevResult: unknown,
  ): Promise<unknown> {
    const stdin = JSON.stringify(requestConfig(net, plugin, a.capabilityArgs, prevResult));
    const outcome = await this.execRetryingBusy({
      binary,
      env: {
        command,
        containerId: a.containerId,
        netns: a.netns,
        ifName: a.ifName,
        args: a.cniArgs,
        path: this.config.binDirs,
      },
      stdin,
      timeoutMs: this.config.execTimeoutMs,
    });
    const context = { plugin: plugin.type, network: net.name, confPath: net.path, command };
    const prefix = `${where(plugin.type, net)} failed`;
    switch (outcome.kind) {
      case 'timeout':
        throw new CniError(
          'DeadlineExceeded',
          `${prefix}: ${command} did not finish within ${this.config.execTimeoutMs} ms and was killed${tail(outcome.stderr)}`,
          context,
        );
      case 'spawn-error':
        throw new CniError(
          outcome.error.code === 'ENOENT' || outcome.error.code === 'EACCES' ? 'Unavailable' : 'Internal',
          `${prefix}: cannot execute ${binary}: ${outcome.error.message}`,
          context,
          { cause: outcome.error },
        );
      case 'output-too-large':
        throw new CniError(
          'Internal',
          `${prefix}: ${command} printed more output than any CNI result; killed`,
          context,
        );
      case 'exited':
        break;
    }
    if (outcome.stderr.trim()) {
      this.logger.debug('CNI plugin stderr', { plugin: plugin.type, command, stderr: outcome.stderr.trim() });
    }
    if (outcome.code !== 0) {
      const body = errorBody(outcome.stdout);
      if (body) {
        const details = body.details && body.details !== body.msg ? `: ${body.details}` : '';
        throw new CniError(
          kernelCodeForCniCode(body.code),
          `${prefix}: ${body.msg}${details} (${command}, CNI error code ${body.code})`,
          { ...context, body },
        );
      }
      const how = outcome.signal ? `was killed by ${outcome.signal}` : `exited with code ${outcome.code}`;
      const said = (outcome.stderr.trim() || outcome.stdout.trim()).slice(-2000);
      throw new CniError(
        'Internal',
        `${prefix}: ${command} ${how}${said ? `: ${said}` : ' without an error message'}`,
        context,
      );
    }
    if (command !== 'ADD') return undefined;
    let result: unknown;
    try {
      result = JSON.parse(outcome.stdout);
    } catch (err) {
      throw new CniError('Internal', `${prefix}: its ADD result is not JSON: ${errorMessage(err)}`, context);
    }
    try {
      parseResult(result, net.cniVersion);
    } catch (err) {
      throw new CniError('Internal', `${prefix}: its ADD result is invalid: ${errorMessage(err)}`, context);
    }
    return result;
  }

  /** libcni retries a plugin binary that is being written ("text file busy") for a few seconds. */
  private async execRetryingBusy(req: ExecRequest): Promise<ExecOutcome> {
    for (let attempt = 1; ; attempt++) {
      const outcome = await this.exec(req);
      if (outcome.kind !== 'spawn-error' || outcome.error.code !== 'ETXTBSY' || attempt >= 5) return outcome;
      await new Promise((resolve) => setTimeout(resolve, 200 * attempt));
    }
  }

  /** The binary of every plugin (and, with `ipam`, of every IPAM plugin), or an Unavailable CniError. */
  private async resolve(net: NetworkConfigList, ipam: boolean): Promise<Resolved> {
    const resolved: { plugin: PluginConf; binary: string }[] = [];
    for (const plugin of net.plugins) {
      const binary = await findPlugin(plugin.type, this.config.binDirs);
      if (!binary) throw this.missing(plugin.type, net, '');
      resolved.push({ plugin, binary });
      const ipamType = (plugin.ipam as { type?: unknown } | undefined)?.type;
      if (ipam && typeof ipamType === 'string' && !(await findPlugin(ipamType, this.config.binDirs))) {
        throw this.missing(ipamType, net, ` (the IPAM plugin of ${plugin.type})`);
      }
    }
    return resolved;
  }

  private missing(type: string, net: NetworkConfigList, role: string): CniError {
    return new CniError(
      'Unavailable',
      `${where(type, net)}${role}: no executable ${type} in ${this.config.binDirs.join(', ')}`,
      { plugin: type, network: net.name, confPath: net.path },
    );
  }

  /** The versions a plugin binary supports (CNI VERSION), remembered until the binary changes. */
  private async supportedVersions(
    net: NetworkConfigList,
    plugin: PluginConf,
    binary: string,
  ): Promise<readonly string[]> {
    const info = await stat(binary);
    const stamp = `${info.mtimeMs}:${info.size}`;
    const known = this.versions.get(binary);
    if (known?.stamp === stamp) return known.supported;
    const outcome = await this.exec({
      binary,
      env: { command: 'VERSION', path: this.config.binDirs },
      stdin: JSON.stringify({ cniVersion: net.cniVersion }),
      timeoutMs: this.config.execTimeoutMs,
    });
    const prefix = `${where(plugin.type, net)} failed`;
    if (outcome.kind !== 'exited' || outcome.code !== 0) {
      const why =
        outcome.kind === 'exited'
          ? (errorBody(outcome.stdout)?.msg ?? (outcome.stderr.trim() || `exited with code ${outcome.code}`))
          : outcome.kind === 'spawn-error'
            ? outcome.error.message
            : outcome.kind;
      throw new CniError('Unavailable', `${prefix}: VERSION: ${why}`, {
        plugin: plugin.type,
        network: net.name,
        confPath: net.path,
        command: 'VERSION',
      });
    }
    let supported: string[];
    try {
      const parsed = JSON.parse(outcome.stdout) as { supportedVersions?: unknown };
      if (!Array.isArray(parsed.supportedVersions)) throw new Error('no "supportedVersions" list');
      supported = parsed.supportedVersions.filter((v): v is string => typeof v === 'string');
    } catch (err) {
      throw new CniError('Unavailable', `${prefix}: VERSION printed no version list: ${errorMessage(err)}`, {
        plugin: plugin.type,
        network: net.name,
        confPath: net.path,
        command: 'VERSION',
      });
    }
    this.versions.set(binary, { stamp, supported });
    return supported;
  }

  private cachedNetwork(cached: CachedAttachment, a: Attachment): NetworkConfigList | undefined {
    try {
      return networkFromList(cached.config, cached.confPath);
    } catch (err) {
      this.logger.warn('ignoring a cached CNI configuration that no longer validates', {
        pod: a.pod,
        err: errorMessage(err),
      });
      return undefined;
    }
  }

  /**
   * The netns path if it still exists, else empty: the spec lets DEL run without a netns, and plugins
   * then release what they hold outside it (addresses) instead of failing on a path that is gone.
   */
  private async existingNetns(path: string): Promise<string> {
    if (!path) return '';
    return (await stat(path).then(
      () => true,
      () => false,
    ))
      ? path
      : '';
  }

  /** Calls for the same container run one at a time (the spec forbids parallel operations on one). */
  private serialize<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.locks.get(key) ?? Promise.resolve();
    const run = previous.then(fn);
    const done = run.then(
      () => undefined,
      () => undefined,
    );
    this.locks.set(key, done);
    void done.then(() => {
      if (this.locks.get(key) === done) this.locks.delete(key);
    });
    return run;
  }
}

/** `CNI plugin bridge (network "nodelet" in /etc/cni/net.d/10-nodelet.conflist)`. */
function where(type: string, net: NetworkConfigList): string {
  return `CNI plugin ${type} (network "${net.name}" in ${net.path})`;
}

/**
 * The configuration one plugin gets on stdin: its own object from the list, with the list's
 * `cniVersion` and `name`, the capability arguments it declared as `runtimeConfig`, and `prevResult`.
 * `capabilities` is taken out (the spec: not set in a request); every other field passes unchanged.
 */
export function requestConfig(
  net: NetworkConfigList,
  plugin: PluginConf,
  capabilityArgs: Readonly<Record<string, unknown>>,
  prevResult: unknown,
): Record<string, unknown> {
  const { capabilities, ...rest } = plugin as Record<string, unknown>;
  const request: Record<string, unknown> = { ...rest, cniVersion: net.cniVersion, name: net.name };
  const declared =
    typeof capabilities === 'object' && capabilities !== null
      ? (capabilities as Record<string, unknown>)
      : {};
  const runtimeConfig = Object.fromEntries(
    Object.entries(capabilityArgs).filter(([key]) => declared[key] === true),
  );
  if (Object.keys(runtimeConfig).length > 0) request.runtimeConfig = runtimeConfig;
  if (prevResult !== undefined) request.prevResult = prevResult;
  return request;
}

/** The kubelet's and containerd's CNI_ARGS: pod identity for plugins that want it, unknown keys allowed. */
export function cniArgs(req: PodNetworkRequest): string {
  const pairs: [string, string][] = [
    ['K8S_POD_NAMESPACE', req.namespace],
    ['K8S_POD_NAME', req.podName],
    ['K8S_POD_INFRA_CONTAINER_ID', req.containerId],
    ['K8S_POD_UID', req.podUid],
    ['IgnoreUnknown', '1'],
  ];
  for (const [key, value] of pairs) {
    if (/[;=]/.test(value)) {
      throw new CniError(
        'InvalidInput',
        `${key} "${value}" cannot be passed in CNI_ARGS: it contains ";" or "="`,
      );
    }
  }
  return pairs.map(([k, v]) => `${k}=${v}`).join(';');
}

function attachment(req: PodNetworkRequest, command: CniCommand): Attachment {
  const bad = (why: string) => new CniError('InvalidInput', `CNI ${command} refused: ${why}`, { command });
  if (!req.containerId || !CNI_NAME.test(req.containerId)) {
    throw bad(
      `container id "${req.containerId}" must start with a letter or digit, then letters, digits, "_", "." or "-"`,
    );
  }
  const ifName = req.ifName ?? 'eth0';
  if (!ifName || ifName.length > 15 || ifName === '.' || ifName === '..' || /[/:\s]/.test(ifName)) {
    throw bad(
      `interface name "${ifName}" must be 1–15 characters, not "." or "..", without "/", ":" or spaces`,
    );
  }
  if (command !== 'DEL' && !req.netnsPath) throw bad('netnsPath is required');
  const capabilityArgs: Record<string, unknown> = { ...req.capabilityArgs };
  const ports = (req.portMappings ?? []).filter((p) => p.hostPort > 0);
  if (ports.length > 0) {
    capabilityArgs.portMappings = ports.map((p) => ({
      hostPort: p.hostPort,
      containerPort: p.containerPort,
      protocol: (p.protocol ?? 'TCP').toLowerCase(),
      ...(p.hostIP ? { hostIP: p.hostIP } : {}),
    }));
  }
  return {
    containerId: req.containerId,
    ifName,
    netns: req.netnsPath ?? '',
    cniArgs: cniArgs(req),
    capabilityArgs,
    pod: `${req.namespace}/${req.podName}`,
  };
}

/** The plugin's `{code, msg, details}` from stdout, if that is what it printed. */
function errorBody(stdout: string): CniErrorBody | undefined {
  try {
    const v = JSON.parse(stdout) as Partial<CniErrorBody>;
    if (typeof v === 'object' && v !== null && typeof v.code === 'number' && typeof v.msg === 'string') {
      return {
        code: v.code,
        msg: v.msg,
        ...(typeof v.details === 'string' ? { details: v.details } : {}),
        ...(typeof v.cniVersion === 'string' ? { cniVersion: v.cniVersion } : {}),
      };
    }
  } catch {
    // not an error object
  }
  return undefined;
}

function tail(stderr: string): string {
  const s = stderr.trim();
  return s ? `; its stderr: ${s.slice(-1000)}` : '';
}
