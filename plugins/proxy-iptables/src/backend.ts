import {
  abandonWithStderr,
  type ChangeSet,
  type CommandRunner,
  CommandError,
  emptyChangeSet,
  HostCommandRunner,
  type ProxyBackend,
  type ProxyState,
  type SyncResult,
  written,
} from '@nodelet/proxy';
import type { Logger } from '@nodelet/kernel';
import {
  FILTER_CHAINS,
  isServiceChain,
  JUMP_RULES,
  type JumpRule,
  KUBE_PROXY_CANARY,
  NAT_CHAINS,
} from './chains.js';
import { detectMode, Iptables, type IptablesMode, type SavedRules, SaveFailed } from './iptables.js';
import { IptablesRenderer, type KernelState, NEED_KERNEL_STATE, type RenderOutput } from './render.js';

export type IptablesBackendChoice = 'auto' | IptablesMode;

export interface IptablesBackendOptions {
  /** Which iptables back end: detected from the host's rules (`auto`, the default), or forced. */
  backend?: IptablesBackendChoice;
  /** Run every command inside this network namespace (`ip netns exec NS …`). */
  netns?: string;
  /** Runs the commands; default: on this host (or in `netns`). */
  runner?: CommandRunner;
  logger: Logger;
}

const BUILTIN = new Set(['PREROUTING', 'INPUT', 'FORWARD', 'OUTPUT', 'POSTROUTING']);

function hasJump(saved: SavedRules, j: JumpRule): boolean {
  return (saved.rules.get(j.table) ?? []).some(
    (r) => r.startsWith(`-A ${j.from} `) && r.endsWith(`-j ${j.to}`) && r.includes(j.comment),
  );
}

/** What a full render needs from iptables-save: our chains that exist, and which jumps are missing. */
function kernelState(saved: SavedRules): KernelState {
  return {
    existingChains: new Set([...(saved.chains.get('nat') ?? [])].filter(isServiceChain)),
    missingJumps: JUMP_RULES.filter((j) => !hasJump(saved, j)),
  };
}

/** Adds the failing line to iptables-restore's "line N failed" message. */
function explain(err: unknown, text: string): Error {
  if (!(err instanceof CommandError)) return err as Error;
  const m = /line (\d+) failed|Error occurred at line: (\d+)/.exec(err.result.stderr);
  if (!m) return err;
  const n = Number(m[1] ?? m[2]);
  return new Error(`${err.message}; line ${n} of the input is: ${text.split('\n')[n - 1]}`);
}

/**
 * The iptables backend: upstream kube-proxy's chain layout, applied with one `iptables-restore
 * --noflush` per sync, partial restores for changes (only the changed service chains, only top-level
 * chains whose content changed), on the legacy or nft back end of iptables.
 */
export class IptablesBackend implements ProxyBackend {
  readonly name = 'iptables';
  private readonly runner: CommandRunner;
  private readonly renderer = new IptablesRenderer();
  private ipt: Iptables | undefined;
  private detecting: Promise<Iptables> | undefined;
  /** Whether a standby shell is kept ready for the next sync (between `prepare` and `stop`). */
  private standby = false;

  constructor(private readonly options: IptablesBackendOptions) {
    this.runner = options.runner ?? new HostCommandRunner(options.netns);
  }

  /** The back end in use (detected on first use when `auto`). */
  async mode(): Promise<IptablesMode> {
    return (await this.tools()).mode;
  }

  /** The back end in use; one detection even when a sync asks while `prepare` is still detecting. */
  private tools(): Promise<Iptables> {
    this.detecting ??= this.detect().catch((err: unknown) => {
      this.detecting = undefined;
      throw err;
    });
    return this.detecting;
  }

  private async detect(): Promise<Iptables> {
    const choice = this.options.backend ?? 'auto';
    let mode: IptablesMode;
    if (choice === 'auto') {
      const d = await detectMode(this.runner);
      mode = d.mode;
      this.options.logger.info(`using iptables-${mode}`, { reason: d.reason });
    } else {
      mode = choice;
      this.options.logger.info(`using iptables-${mode}`, { reason: 'configured' });
    }
    this.ipt = new Iptables(mode, this.runner);
    return this.ipt;
  }

  /** Detects the back end (when `auto`) and starts the shell the first sync's restore runs in. */
  async prepare(): Promise<void> {
    this.standby = true;
    (await this.tools()).prepare();
  }

  /** Ends the waiting shell; the rules stay in force. */
  async stop(): Promise<void> {
    this.standby = false;
    await this.ipt?.close();
  }

  async sync(state: ProxyState, changes: ChangeSet, full: boolean): Promise<SyncResult> {
    try {
      return await this.syncRules(state, changes, full);
    } finally {
      // The next sync's shell is started once this sync has returned, not while it runs.
      if (this.standby) setImmediate(() => this.standby && this.ipt?.prepare());
    }
  }

  private async syncRules(state: ProxyState, changes: ChangeSet, full: boolean): Promise<SyncResult> {
    const ipt = await this.tools();
    let doFull = full || !this.renderer.canPartial;
    if (!doFull && changes.updated.size === 0 && changes.removed.size === 0) {
      // A periodic sync with nothing to change: check that our rules are still there (the canary).
      if (!(await ipt.hasChain('mangle', KUBE_PROXY_CANARY))) {
        this.options.logger.warn(
          `the ${KUBE_PROXY_CANARY} chain is gone (iptables were flushed?); rewriting every rule`,
        );
        doFull = true;
      }
    }
    let out: RenderOutput;
    try {
      out = doFull ? await this.fullSync(ipt, state, changes) : await this.partialSync(ipt, state, changes);
    } catch (err) {
      this.renderer.reset();
      throw err;
    }
    this.renderer.applied(out);
    return {
      full: out.full,
      written: out.rulesWritten,
      bytes: out.bytes,
      summary:
        out.bytes > 0
          ? `iptables-${ipt.mode}-restore: ${out.chainsWritten} chains, ${out.rulesWritten} rules, ${out.deletedChains.length} deleted; ${out.portsRendered} service ports rendered`
          : 'nothing to write',
    };
  }

  private async partialSync(ipt: Iptables, state: ProxyState, changes: ChangeSet): Promise<RenderOutput> {
    const out = this.renderer.render({ state, changes, full: false });
    if (out.bytes > 0) await ipt.restore(out.text).catch((err) => Promise.reject(explain(err, out.text)));
    return out;
  }

  /**
   * A full sync: iptables-restore starts, with iptables-save beside it in the same child (what exists:
   * stale chains, missing jumps), and the rules go into the restore's stdin while they are rendered, so
   * the kernel tool parses the first rules while the last are produced. Each chunk is in the pipe before
   * the next is rendered into the same memory (the render's memory stays a few blocks at any size). The
   * save is needed only for the last lines of the nat table; if it fails, the restore is killed before
   * it saw a COMMIT, and nothing changes.
   */
  private async fullSync(ipt: Iptables, state: ProxyState, changes: ChangeSet): Promise<RenderOutput> {
    const started = ipt.startRestoreWithSave();
    if (!started) {
      const out = this.renderer.render({ state, changes, full: true, ...kernelState(await ipt.save()) });
      await ipt.restore(out.text).catch((err) => Promise.reject(explain(err, out.text)));
      return out;
    }
    const { restore, saved } = started;
    const steps = this.renderer.steps({ state, changes, full: true }, true);
    let kernel: KernelState = {};
    let out: RenderOutput;
    try {
      let r = steps.next();
      while (!r.done) {
        if (r.value === NEED_KERNEL_STATE) {
          kernel = kernelState(await saved);
          r = steps.next(kernel);
          continue;
        }
        for (const chunk of r.value) await written(restore.stdin, chunk);
        r = steps.next();
      }
      out = r.value;
    } catch (err) {
      const detail = await abandonWithStderr(restore);
      if (err instanceof SaveFailed && detail) throw new Error(`${err.message}: ${detail}`);
      throw err;
    }
    restore.stdin.end();
    const result = await restore.result;
    if (result.code !== 0) {
      // The streamed input is gone: the same render again (same state, same kernel) shows the failing line.
      const text = this.renderer.render({ state, changes, full: true, ...kernel }).text;
      throw explain(new CommandError(ipt.restoreCommand, result), text);
    }
    return out;
  }

  /** Removes our jump rules and chains from both back ends (legacy and nft), wherever they exist. */
  async cleanup(): Promise<void> {
    for (const mode of ['legacy', 'nft'] as const) {
      const ipt = new Iptables(mode, this.runner);
      let saved: SavedRules;
      try {
        saved = await ipt.save();
      } catch {
        continue;
      }
      const text = cleanupRestore(saved);
      if (!text) continue;
      await ipt.restore(text).catch((err) => {
        throw new Error(`cleaning up iptables-${mode} rules failed: ${(err as Error).message}`);
      });
      this.options.logger.info(`removed proxy rules from iptables-${mode}`);
    }
    this.renderer.reset();
  }
}

/** iptables-restore input that removes our jumps and chains from what `saved` shows; '' if none. */
export function cleanupRestore(saved: SavedRules): string {
  const out: string[] = [];
  const owned: Record<string, (c: string) => boolean> = {
    filter: (c) => FILTER_CHAINS.includes(c),
    nat: (c) => NAT_CHAINS.includes(c) || isServiceChain(c),
    mangle: (c) => c === KUBE_PROXY_CANARY,
  };
  for (const table of ['filter', 'nat', 'mangle']) {
    const chains = [...(saved.chains.get(table) ?? [])].filter(owned[table]!);
    if (chains.length === 0) continue;
    const ours = new Set(chains);
    const jumps = (saved.rules.get(table) ?? []).filter((r) => {
      const [, chain] = r.split(' ');
      const target = /-j (\S+)$/.exec(r)?.[1];
      return BUILTIN.has(chain!) && target !== undefined && ours.has(target);
    });
    out.push(`*${table}`);
    for (const c of chains) out.push(`:${c} - [0:0]`);
    for (const j of jumps) out.push(`-D${j.slice(2)}`);
    for (const c of chains) out.push(`-X ${c}`);
    out.push('COMMIT');
  }
  return out.length ? out.join('\n') + '\n' : '';
}

/** The full rules for `state` as iptables-restore input into an empty namespace (for golden files, dry runs). */
export function renderIptables(state: ProxyState): string {
  return new IptablesRenderer().render({
    state,
    changes: emptyChangeSet(),
    full: true,
    missingJumps: JUMP_RULES,
  }).text;
}
