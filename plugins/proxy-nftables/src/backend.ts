import { release } from 'node:os';
import type { Logger } from '@nodelet/kernel';
import {
  type ChangeSet,
  type CommandRunner,
  CommandError,
  emptyChangeSet,
  HostCommandRunner,
  type ProxyBackend,
  type ProxyState,
  runChecked,
  type SyncResult,
} from '@nodelet/proxy';
import { FAMILY, isAffinitySet, isServiceChain, TABLE } from './names.js';
import { NftRenderer } from './render.js';

export interface NftablesBackendOptions {
  netns?: string;
  runner?: CommandRunner;
  logger: Logger;
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
  if (!m) return err;
  return new Error(
    `${err.message}; line ${m[1]} of the transaction is: ${text.split('\n')[Number(m[1]) - 1]}`,
  );
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
  private deferred: { chains: string[]; at: number } | undefined;
  private recreated = false;

  constructor(private readonly options: NftablesBackendOptions) {
    this.runner = options.runner ?? new HostCommandRunner(options.netns);
    this.deleteStaleNow = options.deleteStaleNow ?? kernelAtLeast(6, 2);
  }

  private async tableExists(): Promise<boolean> {
    const r = await runChecked(this.runner, 'nft', ['list', 'tables', FAMILY]);
    return r.stdout.split('\n').some((l) => l.trim() === `table ${FAMILY} ${TABLE}`);
  }

  /** Service chains and affinity sets of an existing table (names only). */
  private async existing(): Promise<{ chains: Set<string>; sets: Set<string> }> {
    const chains = new Set<string>();
    const sets = new Set<string>();
    const c = await runChecked(this.runner, 'nft', ['list', 'chains', FAMILY]);
    let inOurs = false;
    for (const line of c.stdout.split('\n')) {
      const t = /^table (\S+) (\S+) \{/.exec(line.trim());
      if (t) inOurs = t[1] === FAMILY && t[2] === TABLE;
      const m = /^\s*chain (\S+) \{/.exec(line);
      if (m && inOurs && isServiceChain(m[1]!)) chains.add(m[1]!);
    }
    const s = await runChecked(this.runner, 'nft', ['list', 'sets', FAMILY]);
    inOurs = false;
    for (const line of s.stdout.split('\n')) {
      const t = /^table (\S+) (\S+) \{/.exec(line.trim());
      if (t) inOurs = t[1] === FAMILY && t[2] === TABLE;
      const m = /^\s*set (\S+) \{/.exec(line);
      if (m && inOurs && isAffinitySet(m[1]!)) sets.add(m[1]!);
    }
    return { chains, sets };
  }

  async sync(state: ProxyState, changes: ChangeSet, full: boolean): Promise<SyncResult> {
    let doFull = full || !this.renderer.canPartial;
    if (!doFull && changes.updated.size === 0 && changes.removed.size === 0 && !(await this.tableExists())) {
      // A periodic sync with nothing to change, and our table is gone (someone ran `nft flush ruleset`).
      this.options.logger.warn(`table ${FAMILY} ${TABLE} is gone; rewriting every rule`);
      doFull = true;
    }
    // Chains left stale by an earlier sync on an old kernel: delete them now, a second later.
    if (this.deferred && Date.now() - this.deferred.at >= 1000) {
      const text = this.deferred.chains.map((c) => `delete chain ${FAMILY} ${TABLE} ${c}`).join('\n') + '\n';
      this.deferred = undefined;
      await runChecked(this.runner, 'nft', ['-f', '-'], { input: text }).catch((err) =>
        this.options.logger.warn('deleting stale nftables chains failed; will retry at the next full sync', {
          err: (err as Error).message,
        }),
      );
    }
    let fresh = false;
    let existing: { chains: Set<string>; sets: Set<string> } | undefined;
    if (doFull) {
      fresh = !(await this.tableExists());
      if (!fresh) existing = await this.existing();
    }
    const out = this.renderer.render({
      state,
      changes,
      full: doFull,
      fresh,
      deleteStaleNow: this.deleteStaleNow,
      recreateBaseChains: doFull && !fresh && !this.recreated,
      ...(existing ? { existingChains: existing.chains, existingSets: existing.sets } : {}),
    });
    if (out.bytes > 0) {
      try {
        await this.apply(out.chunks);
      } catch (err) {
        this.renderer.reset();
        throw explain(err, out.text);
      }
    }
    if (doFull) this.recreated = true;
    if (out.deferredChains.length > 0) this.deferred = { chains: out.deferredChains, at: Date.now() };
    return {
      full: out.full,
      written: out.commands,
      bytes: out.bytes,
      summary:
        out.bytes > 0 ? `nft -f: ${out.commands} commands${fresh ? ' (new table)' : ''}` : 'nothing to write',
    };
  }

  /** One `nft -f -` transaction, its input written piece by piece. */
  private async apply(chunks: readonly string[]): Promise<void> {
    const nft = this.runner.start?.('nft', ['-f', '-']);
    if (!nft) {
      await runChecked(this.runner, 'nft', ['-f', '-'], { input: chunks.join('') });
      return;
    }
    for (const c of chunks) nft.stdin.write(c);
    nft.stdin.end();
    const result = await nft.result;
    if (result.code !== 0) throw new CommandError('nft -f -', result);
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
