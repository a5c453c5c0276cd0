import { stat } from 'node:fs/promises';
import { CniError, type CniCommand, kernelCodeForCniCode } from '@nodelet/cni';
import { type Clock, errorMessage, type Logger } from '@nodelet/kernel';
import { type ExecOutcome, type ExecRequest, findPlugin } from './invoke.js';
import { type NetworkConfigList, type PluginConf } from './network-config.js';
import { parseResult } from './result.js';
import { type Attachment, errorBody, requestConfig, tail, where } from './attachment.js';

/** The binary resolved for each plugin of a network, in list order. */
export type Resolved = readonly { readonly plugin: PluginConf; readonly binary: string }[];

export interface PluginRunnerOptions {
  readonly binDirs: readonly string[];
  readonly execTimeoutMs: number;
  readonly exec: (req: ExecRequest) => Promise<ExecOutcome>;
  readonly logger: Logger;
  /** Paces the retries of a busy binary. */
  readonly clock: Clock;
}

/**
 * Executes the plugin binaries of a network: finds them in `binDirs`, asks each which CNI versions it
 * speaks, and runs one for one command with the spec's environment and stdin, turning every way it can
 * fail (timeout, spawn error, an error body, a bad result) into a CniError naming plugin, network and file.
 */
export class PluginRunner {
  private readonly versions = new Map<string, { stamp: string; supported: readonly string[] }>();

  constructor(private readonly options: PluginRunnerOptions) {}

  /**
   * Runs one plugin for one command. ADD resolves to the plugin's result (parsed JSON, checked); other
   * commands to undefined. Failures become CniErrors naming the plugin, network and file.
   */
  async run(
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
        path: this.options.binDirs,
      },
      stdin,
      timeoutMs: this.options.execTimeoutMs,
    });
    const context = { plugin: plugin.type, network: net.name, confPath: net.path, command };
    const prefix = `${where(plugin.type, net)} failed`;
    switch (outcome.kind) {
      case 'timeout':
        throw new CniError(
          'DeadlineExceeded',
          `${prefix}: ${command} did not finish within ${this.options.execTimeoutMs} ms and was killed${tail(outcome.stderr)}`,
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
      this.options.logger.debug('CNI plugin stderr', {
        plugin: plugin.type,
        command,
        stderr: outcome.stderr.trim(),
      });
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
      const outcome = await this.options.exec(req);
      if (outcome.kind !== 'spawn-error' || outcome.error.code !== 'ETXTBSY' || attempt >= 5) return outcome;
      await this.options.clock.sleep(200 * attempt);
    }
  }

  /** The binary of every plugin (and, with `ipam`, of every IPAM plugin), or an Unavailable CniError. */
  async resolve(net: NetworkConfigList, ipam: boolean): Promise<Resolved> {
    const resolved: { plugin: PluginConf; binary: string }[] = [];
    for (const plugin of net.plugins) {
      const binary = await findPlugin(plugin.type, this.options.binDirs);
      if (!binary) throw this.missing(plugin.type, net, '');
      resolved.push({ plugin, binary });
      const ipamType = (plugin.ipam as { type?: unknown } | undefined)?.type;
      if (ipam && typeof ipamType === 'string' && !(await findPlugin(ipamType, this.options.binDirs))) {
        throw this.missing(ipamType, net, ` (the IPAM plugin of ${plugin.type})`);
      }
    }
    return resolved;
  }

  private missing(type: string, net: NetworkConfigList, role: string): CniError {
    return new CniError(
      'Unavailable',
      `${where(type, net)}${role}: no executable ${type} in ${this.options.binDirs.join(', ')}`,
      { plugin: type, network: net.name, confPath: net.path },
    );
  }

  /** The versions a plugin binary supports (CNI VERSION), remembered until the binary changes. */
  async supportedVersions(
    net: NetworkConfigList,
    plugin: PluginConf,
    binary: string,
  ): Promise<readonly string[]> {
    const info = await stat(binary);
    const stamp = `${info.mtimeMs}:${info.size}`;
    const known = this.versions.get(binary);
    if (known?.stamp === stamp) return known.supported;
    const outcome = await this.options.exec({
      binary,
      env: { command: 'VERSION', path: this.options.binDirs },
      stdin: JSON.stringify({ cniVersion: net.cniVersion }),
      timeoutMs: this.options.execTimeoutMs,
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
}
