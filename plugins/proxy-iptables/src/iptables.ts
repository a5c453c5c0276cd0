import {
  CommandError,
  type CommandRunner,
  type RunningCommand,
  runChecked,
  StandbyShell,
  statusLine,
  statusSections,
} from '@nodelet/proxy';

/** The two kernel back ends of iptables on Debian: x_tables (`iptables-legacy`) and nf_tables (`iptables-nft`). */
export type IptablesMode = 'legacy' | 'nft';

export const tools = (mode: IptablesMode) => ({
  save: `iptables-${mode}-save`,
  restore: `iptables-${mode}-restore`,
});

const RESTORE_ARGS = ['--wait=5', '--noflush'];

/** Hint chains kubelet (and kube-proxy's iptables-wrapper convention) leave in the mangle table. */
const HINT_CHAINS = ['KUBE-IPTABLES-HINT', 'KUBE-KUBELET-CANARY'];

export interface Detection {
  mode: IptablesMode;
  reason: string;
}

/**
 * The detection as one shell script, the way upstream's iptables-wrapper runs it: the mangle table of
 * each back end for a hint chain (the first found ends it), else the rule lines of both families of each
 * back end (a save that fails counts what it printed). Prints `hint MODE CHAIN` or two `rules MODE N`
 * lines. One child of the proxy instead of six: node forks its whole process for each, ~6 ms of CPU
 * apiece at a proxy's start, while the shell's own forks are cheap.
 */
const DETECT_SCRIPT = [
  'for m in nft legacy; do',
  '  t=$(iptables-$m-save -t mangle 2>/dev/null) || t=',
  ...HINT_CHAINS.map((c) => `  case "$t" in *":${c} "*) echo "hint $m ${c}"; exit 0 ;; esac`),
  'done',
  'for m in nft legacy; do',
  `  echo "rules $m $({ iptables-$m-save || :; ip6tables-$m-save || :; } 2>/dev/null | grep -c '^-')"`,
  'done',
].join('\n');

/**
 * Which back end the host's existing rules use, the way upstream's iptables-wrapper decides: a kubelet
 * hint chain in the mangle table wins; otherwise the back end with more rules (IPv4 and IPv6) wins, and a
 * tie (say, no rules at all) means nft, the default `iptables` on current distributions.
 */
export async function detectMode(runner: CommandRunner): Promise<Detection> {
  // A shell that cannot start reads as no rules at all, as a save that cannot.
  const out = await runner.run('sh', ['-c', DETECT_SCRIPT], { timeoutMs: 120_000 }).then(
    (r) => r.stdout,
    () => '',
  );
  const hint = /^hint (nft|legacy) (\S+)$/m.exec(out);
  if (hint) {
    const mode = hint[1] as IptablesMode;
    return { mode, reason: `chain ${hint[2]} found in iptables-${mode}-save -t mangle` };
  }
  const count = (mode: IptablesMode) => Number(new RegExp(`^rules ${mode} (\\d+)$`, 'm').exec(out)?.[1] ?? 0);
  const counts: Record<IptablesMode, number> = { nft: count('nft'), legacy: count('legacy') };
  const mode: IptablesMode = counts.legacy > counts.nft ? 'legacy' : 'nft';
  return { mode, reason: `existing rules: ${counts.legacy} legacy, ${counts.nft} nft` };
}

/** What iptables-save shows: chains per table and rule lines per table. */
export interface SavedRules {
  chains: Map<string, Set<string>>;
  rules: Map<string, string[]>;
}

export function parseSave(text: string): SavedRules {
  const chains = new Map<string, Set<string>>();
  const rules = new Map<string, string[]>();
  let table = '';
  for (const line of text.split('\n')) {
    if (line.startsWith('*')) {
      table = line.slice(1).trim();
      chains.set(table, new Set());
      rules.set(table, []);
    } else if (line.startsWith(':')) {
      chains.get(table)?.add(line.slice(1).split(' ')[0]!);
    } else if (line.startsWith('-A ')) {
      rules.get(table)?.push(line);
    }
  }
  return { chains, rules };
}

const SAVE_EXIT = '# nodelet: iptables-save exit ';

/** A restore being fed, and what iptables-save showed beside it (`Iptables.startRestoreWithSave`). */
export interface RestoreWithSave {
  restore: RunningCommand;
  saved: Promise<SavedRules>;
}

/** iptables-save failed (`code`, -1 when unknown; its messages are on the stderr of the command it ran in). */
export class SaveFailed extends Error {
  constructor(
    readonly command: string,
    readonly code: number,
    why = `exited with code ${code}`,
  ) {
    super(`${command} ${why}`);
    this.name = 'SaveFailed';
  }
}

/** The iptables tools of one back end, run through `runner` (possibly inside a network namespace). */
export class Iptables {
  /**
   * The shell a sync's restore runs in, started ahead (`prepare`): `full` runs iptables-save in the
   * background and becomes the restore (the save's output comes first on stdout, ended by a line with
   * its exit status; the restore writes nothing there), `restore` becomes the restore. One child per
   * sync, forked while the proxy is idle.
   */
  private readonly standby: StandbyShell;

  constructor(
    readonly mode: IptablesMode,
    private readonly runner: CommandRunner,
  ) {
    const { save, restore } = tools(mode);
    const exec = `exec ${restore} ${RESTORE_ARGS.join(' ')}`;
    this.standby = new StandbyShell(runner, {
      full: `{ ${save}; ${statusLine(SAVE_EXIT)}; } & ${exec}`,
      restore: exec,
    });
  }

  async save(): Promise<SavedRules> {
    const r = await runChecked(this.runner, tools(this.mode).save, []);
    return parseSave(r.stdout);
  }

  /** Whether `chain` exists in `table` (one cheap listing of that chain only). */
  async hasChain(table: string, chain: string): Promise<boolean> {
    const r = await this.runner.run(`iptables-${this.mode}`, ['-w', '5', '-t', table, '-S', chain]);
    return r.code === 0;
  }

  /** Starts the shell the next restore will run in (while the proxy is idle). */
  prepare(): void {
    this.standby.prepare();
  }

  /** Ends the waiting shell, if any. */
  close(): Promise<void> {
    return this.standby.close();
  }

  /** One atomic `iptables-restore --noflush` (waiting for the xtables lock). */
  async restore(text: string): Promise<void> {
    const running = this.standby.run('restore');
    if (!running) {
      await runChecked(this.runner, tools(this.mode).restore, RESTORE_ARGS, { input: text });
      return;
    }
    running.stdin.end(text);
    const result = await running.result;
    if (result.code !== 0) throw new CommandError(this.restoreCommand, result);
  }

  /**
   * The restore, fed while its input is produced, with iptables-save running beside it in the same
   * child (the standby shell's `full`). Undefined when the runner cannot stream.
   */
  startRestoreWithSave(): RestoreWithSave | undefined {
    const { save } = tools(this.mode);
    const running = this.standby.run('full');
    if (!running) return undefined;
    const saved = statusSections(running, SAVE_EXIT, 1).then(
      ([section]) => {
        if (section!.code !== 0) throw new SaveFailed(save, section!.code);
        return parseSave(section!.text);
      },
      (err: Error) => Promise.reject(new SaveFailed(save, -1, `gave no status (${err.message})`)),
    );
    saved.catch(() => undefined); // awaited by the caller when it needs the rules
    return { restore: running, saved };
  }

  /** The restore command line, for error messages. */
  get restoreCommand(): string {
    return `${tools(this.mode).restore} ${RESTORE_ARGS.join(' ')}`;
  }
}
