import { stat } from 'node:fs/promises';
import {
  CniError,
  type CniNetwork,
  type NetworkStatus,
  type PodNetworkRequest,
  type PodNetworkStatus,
} from '@nodelet/cni';
import { type Clock, createLogger, errorMessage, isErrorCode, type Logger, RealClock } from '@nodelet/kernel';
import { type CniExecConfig, DEFAULT_CONFIG } from './config.js';
import { execPlugin, type ExecOutcome, type ExecRequest } from './invoke.js';
import { loadDefaultNetwork, type NetworkConfigList, networkFromList, toConflist } from './network-config.js';
import { parseResult, toPodNetworkStatus } from './result.js';
import { CACHE_KIND, type CachedAttachment, ResultCache } from './result-cache.js';
import { atLeast } from './version.js';
import { PluginRunner, type Resolved } from './plugin-runner.js';
import { type Attachment, attachment, where } from './attachment.js';

export { cniArgs, requestConfig } from './attachment.js';

export interface CniExecOptions extends Partial<CniExecConfig> {
  logger?: Logger;
  /** Runs one plugin; tests may wrap it. Default `execPlugin`. */
  exec?: (req: ExecRequest) => Promise<ExecOutcome>;
  /** Paces retries; a RealClock when unset. */
  clock?: Clock;
}

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
  private readonly runner: PluginRunner;
  private readonly locks = new Map<string, Promise<void>>();

  constructor(options: CniExecOptions = {}) {
    this.config = {
      confDir: options.confDir ?? DEFAULT_CONFIG.confDir,
      binDirs: [...(options.binDirs ?? DEFAULT_CONFIG.binDirs)],
      cacheDir: options.cacheDir ?? DEFAULT_CONFIG.cacheDir,
      execTimeoutMs: options.execTimeoutMs ?? DEFAULT_CONFIG.execTimeoutMs,
    };
    this.cache = new ResultCache(this.config.cacheDir);
    this.logger = options.logger ?? createLogger({ component: 'cni-exec' });
    this.runner = new PluginRunner({
      binDirs: this.config.binDirs,
      execTimeoutMs: this.config.execTimeoutMs,
      exec: options.exec ?? execPlugin,
      logger: this.logger,
      clock: options.clock ?? new RealClock(),
    });
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
      resolved = await this.runner.resolve(net, true);
    } catch (err) {
      return { ready: false, message: errorMessage(err) };
    }
    for (const { plugin, binary } of resolved) {
      let supported: readonly string[];
      try {
        supported = await this.runner.supportedVersions(net, plugin, binary);
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
    const resolved = await this.runner.resolve(net, false);
    let prevResult: unknown;
    for (const { plugin, binary } of resolved) {
      try {
        prevResult = await this.runner.run(net, plugin, binary, 'ADD', a, prevResult);
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
    const resolved = await this.runner.resolve(net, false);
    for (const { plugin, binary } of [...resolved].reverse()) {
      await this.runner.run(net, plugin, binary, 'DEL', { ...a, netns }, prevResult);
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
    const resolved = await this.runner.resolve(net, false);
    for (const { plugin, binary } of resolved) {
      await this.runner.run(net, plugin, binary, 'CHECK', a, cached.result);
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
        await this.runner.run(net, plugin, binary, 'DEL', a, undefined);
      } catch (err) {
        this.logger.warn('CNI DEL after a failed ADD failed too', { pod: a.pod, err: errorMessage(err) });
      }
    }
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
