import { release } from 'node:os';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { type Clock, type Logger, RealClock } from '@nodelet/kernel';
import {
  abandonWithStderr,
  type ChangeSet,
  type CommandRunner,
  CommandError,
  emptyChangeSet,
  HostCommandRunner,
  type ProxyBackend,
  type ProxyState,
  runChecked,
  type RunningCommand,
  StandbyShell,
  statusLine,
  statusSections,
  type SyncResult,
  written,
} from '@nodelet/proxy';
import { FAMILY, isAffinitySet, isServiceChain, TABLE } from './names.js';
import { type NftRenderOutput, NftRenderer } from './render.js';

export interface NftablesBackendOptions {
  netns?: string;
  runner?: CommandRunner;
  logger: Logger;
  /** Times the deferred deletion of stale chains; a RealClock when unset. */
  clock?: Clock;
  /**
   * Delete stale chains in the same transaction that stops using them. Kernels before 6.2 notice a
   * dropped map reference only a moment later, so upstream defers deletion; default: by kernel version.
   */
  deleteStaleNow?: boolean;
}

/** Kernel ≥ 6.2 (from `uname -r`). */
export function kernelAtLeast(major: number, minor: number, version = release()): boolean {
  const m = /^(\d+)\.(\d+)/.exec(version);
  if (!m) return false;
  const [a, b] = [Number(m[1]), Number(m[2])];
  return a > major || (a === major && b >= minor);
}

/** Adds the failing command to nft's error (nft names the line of its input). */
function explain(err: unknown, text: string): Error {
  if (!(err instanceof CommandError)) return err as Error;
  const m = /\/dev\/stdin:(\d+):/.exec(err.result.stderr);
  const line = m ? text.split('\n')[Number(m[1]) - 1] : undefined;
  if (!line) return err; // not a line nodelet wrote: nft's own quote is all there is
  return new Error(`${err.message}; line ${m![1]} of the transaction is: ${line}`);
}

/**
 * Input a streamed full sync lets wait for nft while it renders on: when nft reads slower than the
 * render, this much is queued beyond the pipe (64 KiB) before the render waits for nft.
 */
const QUEUED_INPUT = 512 * 1024;

/**
 * What a full sync lists before its transaction, in one nft: every chain and set of the family, terse
 * (names, no set elements). Our table's header is in it whenever the table exists.
 */
const LISTING = ['-t', `list chains ${FAMILY}; list sets ${FAMILY}`];
const LISTED = '# nodelet: nft list exit ';

/** Whether a listing (`nft list tables`, or LISTING) shows our table. */
const hasTable = (listing: string) =>
  listing
    .split('\n')
    .some((l) => /^table (\S+) (\S+)( \{)?$/.exec(l.trim())?.slice(1, 3).join(' ') === `${FAMILY} ${TABLE}`);

/** Names in `nft list chains|sets` output that belong to our table and pass `ours`. */
function namesInOurTable(
  listing: string,
  kind: 'chain' | 'set',
  ours: (name: string) => boolean,
): Set<string> {
  const names = new Set<string>();
  const declaration = new RegExp(`^\\s*${kind} (\\S+) \\{`);
  let inOurs = false;
  for (const line of listing.split('\n')) {
    const t = /^table (\S+) (\S+) \{/.exec(line.trim());
    if (t) inOurs = t[1] === FAMILY && t[2] === TABLE;
    const m = declaration.exec(line);
    if (m && inOurs && ours(m[1]!)) names.add(m[1]!);
  }
  return names;
}

/**
 * The nftables backend: one `ip kube-proxy` table, verdict maps from (address, protocol, port) to
 * per-service chains, `numgen random mod N` to pick an endpoint; every sync is one `nft -f` transaction
 * holding only what changed.
 */
export class NftablesBackend implements ProxyBackend {
  readonly name = 'nftables';
  private readonly runner: CommandRunner;
  private readonly renderer = new NftRenderer();
  private readonly deleteStaleNow: boolean;
  private readonly clock: Clock;
  private deferred: { chains: string[]; at: number } | undefined;
  private recreated = false;
  /**
   * The shell each sync's transaction runs in, started ahead: `apply` becomes `nft -f -`; `full` first
   * lists what exists (ended by a status line), then becomes `nft -f -`.
   */
  private readonly standby: StandbyShell;
  /** Whether a standby shell is kept ready for the next sync (between `prepare` and `stop`). */
  private standbyWanted = false;

  constructor(private readonly options: NftablesBackendOptions) {
    this.runner = options.runner ?? new HostCommandRunner(options.netns);
    this.standby = new StandbyShell(this.runner, {
      apply: 'exec nft -f -',
      full: `nft ${LISTING[0]} '${LISTING[1]}'; ${statusLine(LISTED)}; exec nft -f -`,
    });
    this.deleteStaleNow = options.deleteStaleNow ?? kernelAtLeast(6, 2);
    this.clock = options.clock ?? new RealClock();
  }

  private async tableExists(): Promise<boolean> {
    return hasTable((await runChecked(this.runner, 'nft', ['list', 'tables', FAMILY])).stdout);
  }

  /**
   * What exists of ours: nothing (`fresh`), or the table with these service chains and affinity sets.
   * From `listing` (the standby shell printed it) or, without one, by running the listing.
   */
  private async existing(
    listing: string | undefined,
  ): Promise<{ fresh: true } | { fresh: false; chains: Set<string>; sets: Set<string> }> {
    const text = listing ?? (await runChecked(this.runner, 'nft', LISTING)).stdout;
    if (!hasTable(text)) return { fresh: true };
    return {
      fresh: false,
      chains: namesInOurTable(text, 'chain', isServiceChain),
      sets: namesInOurTable(text, 'set', isAffinitySet),
    };
  }

  /**
   * The listing the standby shell's `full` script printed before it became `nft -f -`. When it
   * failed, the shell is killed before any input: nothing is applied.
   */
  private async listed(running: RunningCommand): Promise<string> {
    const section = await statusSections(running, LISTED, 1).then(
      ([s]) => s!,
      (err: Error) => err,
    );
    if (!(section instanceof Error) && section.code === 0) return section.text;
    const stderr = await abandonWithStderr(running);
    const detail = stderr ? `: ${stderr}` : '';
    const why =
      section instanceof Error ? `gave no status (${section.message})` : `exited with code ${section.code}`;
    throw new Error(`nft ${LISTING[0]} '${LISTING[1]}' ${why}${detail}`);
  }

  /** Starts the shell the first sync's transaction runs in. */
  async prepare(): Promise<void> {
    this.standbyWanted = true;
    this.standby.prepare();
  }

  /** Ends the waiting shell; the rules stay in force. */
  async stop(): Promise<void> {
    this.standbyWanted = false;
    await this.standby.close();
  }

  async sync(state: ProxyState, changes: ChangeSet, full: boolean): Promise<SyncResult> {
    try {
      return await this.syncRules(state, changes, full);
    } finally {
      // The next sync's shell is started once this sync has returned, not while it runs.
      if (this.standbyWanted) setImmediate(() => this.standbyWanted && this.standby.prepare());
    }
  }

  private async syncRules(state: ProxyState, changes: ChangeSet, full: boolean): Promise<SyncResult> {
    let doFull = full || !this.renderer.canPartial;
    if (!doFull && changes.updated.size === 0 && changes.removed.size === 0 && !(await this.tableExists())) {
      // A periodic sync with nothing to change, and our table is gone (someone ran `nft flush ruleset`).
      this.options.logger.warn(`table ${FAMILY} ${TABLE} is gone; rewriting every rule`);
      doFull = true;
    }
    // Chains left stale by an earlier sync on an old kernel: delete them now, a second later.
    if (this.deferred && this.clock.now() - this.deferred.at >= 1000) {
      const text = this.deferred.chains.map((c) => `delete chain ${FAMILY} ${TABLE} ${c}`).join('\n') + '\n';
      this.deferred = undefined;
      await runChecked(this.runner, 'nft', ['-f', '-'], { input: text }).catch((err) =>
        this.options.logger.warn('deleting stale nftables chains failed; will retry at the next full sync', {
          err: (err as Error).message,
        }),
      );
    }
    const { out, fresh } = doFull
      ? await this.fullSync(state, changes)
      : { out: await this.partialSync(state, changes), fresh: false };
    if (doFull) this.recreated = true;
    if (out.deferredChains.length > 0) this.deferred = { chains: out.deferredChains, at: this.clock.now() };
    return {
      full: out.full,
      written: out.commands,
      bytes: out.bytes,
      summary:
        out.bytes > 0 ? `nft -f: ${out.commands} commands${fresh ? ' (new table)' : ''}` : 'nothing to write',
    };
  }

  /** Only what changed, rendered whole, then one `nft -f -` (in the standby shell when there is one). */
  private async partialSync(state: ProxyState, changes: ChangeSet): Promise<NftRenderOutput> {
    const out = this.renderer.render({ state, changes, full: false, deleteStaleNow: this.deleteStaleNow });
    if (out.bytes === 0) return out;
    const nft = this.standby.run('apply');
    if (nft) for (const c of out.chunks) nft.stdin.write(c);
    await this.commit(out, nft);
    return out;
  }

  /**
   * Every rule: what exists is listed first (in the standby shell, which then becomes `nft -f -`), and
   * the transaction goes into nft's stdin while it is rendered, so nft parses the first service ports
   * while the last are produced. Anything that fails before the input ends kills nft: nothing applies.
   */
  private async fullSync(
    state: ProxyState,
    changes: ChangeSet,
  ): Promise<{ out: NftRenderOutput; fresh: boolean }> {
    const nft = this.standby.run('full');
    let out: NftRenderOutput;
    let fresh = false;
    try {
      const existing = await this.existing(nft ? await this.listed(nft) : undefined);
      fresh = existing.fresh;
      const steps = this.renderer.steps({
        state,
        changes,
        full: true,
        fresh,
        deleteStaleNow: this.deleteStaleNow,
        recreateBaseChains: !fresh && !this.recreated,
        ...(existing.fresh ? {} : { existingChains: existing.chains, existingSets: existing.sets }),
      });
      let r = steps.next();
      while (!r.done) {
        if (nft) {
          // Render on while nft reads what is queued (one turn of the event loop hands it to the pipe);
          // wait for nft only when more than QUEUED_INPUT is waiting for it.
          const taken = written(nft.stdin, r.value);
          await (nft.stdin.writableLength > QUEUED_INPUT ? taken : nextTurn());
        }
        r = steps.next();
      }
      out = r.value;
    } catch (err) {
      nft?.kill();
      this.renderer.reset();
      throw err;
    }
    await this.commit(out, nft);
    return { out, fresh };
  }

  /**
   * Ends a transaction whose input is in `nft`'s stdin, or without a standby shell runs `nft -f -` on
   * the whole text; a refused transaction resets the renderer and the error names the failing line.
   */
  private async commit(out: NftRenderOutput, nft: RunningCommand | undefined): Promise<void> {
    try {
      if (!nft) await runChecked(this.runner, 'nft', ['-f', '-'], { input: out.text });
      else {
        nft.stdin.end();
        const result = await nft.result;
        if (result.code !== 0) throw new CommandError('nft -f -', result);
      }
    } catch (err) {
      this.renderer.reset();
      throw explain(err, out.text);
    }
  }

  /** Deletes the `ip kube-proxy` table when it exists. */
  async cleanup(): Promise<void> {
    let exists: boolean;
    try {
      exists = await this.tableExists();
    } catch {
      return; // nft is not installed: nothing of ours can exist
    }
    if (exists) {
      await runChecked(this.runner, 'nft', ['delete', 'table', FAMILY, TABLE]);
      this.options.logger.info(`removed nftables table ${FAMILY} ${TABLE}`);
    }
    this.renderer.reset();
    this.recreated = false;
  }
}

/** The full transaction for `state` into a namespace without the table (golden files, dry runs). */
export function renderNftables(state: ProxyState): string {
  return new NftRenderer().render({ state, changes: emptyChangeSet(), full: true, fresh: true }).text;
}
