import { existsSync } from 'node:fs';
import type { Logger } from '@nodelet/kernel';
import {
  type ChangeSet,
  type CommandRunner,
  HostCommandRunner,
  nodePortIPs,
  type ProxyBackend,
  type ProxyState,
  runChecked,
  type SyncResult,
} from '@nodelet/proxy';
import { ipvsadmDiff, parseIpvsadmSave } from './ipvsadm.js';
import { DUMMY_INTERFACE, ipsetScript, renderIpvs, type IpvsRender, type Scheduler } from './render.js';

export interface IpvsBackendOptions {
  scheduler?: Scheduler;
  netns?: string;
  runner?: CommandRunner;
  logger: Logger;
  /** Where the kernel shows IPVS (`/proc/net/ip_vs`); its absence means no IPVS module. */
  procPath?: string;
  /** Overrides the check (tests). */
  available?: boolean;
}

const JUMPS: [table: string, from: string, to: string][] = [
  ['nat', 'PREROUTING', 'KUBE-SERVICES'],
  ['nat', 'OUTPUT', 'KUBE-SERVICES'],
  ['nat', 'POSTROUTING', 'KUBE-POSTROUTING'],
  ['filter', 'FORWARD', 'KUBE-FORWARD'],
  ['filter', 'INPUT', 'KUBE-PROXY-FIREWALL'],
];

/**
 * The IPVS backend: virtual servers per service address with masquerading real servers, the service
 * addresses on kube-ipvs0, and ipset/iptables helpers. It applies them only when the kernel has IPVS;
 * otherwise each sync renders and checks the rules, reports that nothing was applied, and the rendered
 * result is available from `lastRender` (this machine's kernel has no IPVS module).
 */
export class IpvsBackend implements ProxyBackend {
  readonly name = 'ipvs';
  private readonly runner: CommandRunner;
  private readonly scheduler: Scheduler;
  private rendered: IpvsRender | undefined;
  private linkReady = false;
  /** ipset entries as last applied; undefined: unknown (recreate). */
  private appliedSets: Map<string, Set<string>> | undefined;

  constructor(private readonly options: IpvsBackendOptions) {
    this.runner = options.runner ?? new HostCommandRunner(options.netns);
    this.scheduler = options.scheduler ?? 'rr';
  }

  /** Whether this kernel has IPVS. */
  get available(): boolean {
    return this.options.available ?? existsSync(this.options.procPath ?? '/proc/net/ip_vs');
  }

  /** The last rendered rules. */
  get lastRender(): IpvsRender | undefined {
    return this.rendered;
  }

  async sync(state: ProxyState, _changes: ChangeSet, full: boolean): Promise<SyncResult> {
    const r = renderIpvs(state, this.scheduler);
    verify(r);
    this.rendered = r;
    const summary = `${r.virtualServers.length} virtual servers, ${r.virtualServers.reduce((n, v) => n + v.realServers.length, 0)} real servers, scheduler ${this.scheduler}`;
    if (!this.available) {
      this.options.logger.once(
        'ipvs-unavailable',
        'warn',
        'this kernel has no IPVS (no /proc/net/ip_vs): IPVS rules are rendered and checked but not applied; use --mode iptables or nftables to carry traffic',
      );
      return { full: true, written: 0, summary: `rendered only (no IPVS in this kernel): ${summary}` };
    }
    let written: number;
    try {
      written = await this.apply(r, state, full);
    } catch (err) {
      this.appliedSets = undefined;
      throw err;
    }
    return { full, written, summary: `${summary}; ${written} ipvsadm commands` };
  }

  private async apply(r: IpvsRender, state: ProxyState, full: boolean): Promise<number> {
    const run = (cmd: string, args: string[], input?: string) =>
      runChecked(this.runner, cmd, args, input !== undefined ? { input } : {});
    if (!this.linkReady) {
      const shown = await this.runner.run('ip', ['link', 'show', DUMMY_INTERFACE]);
      if (shown.code !== 0) await run('ip', ['link', 'add', DUMMY_INTERFACE, 'type', 'dummy']);
      this.linkReady = true;
    }
    const bound = await this.boundAddresses();
    const wanted = new Set(r.addresses);
    for (const a of wanted)
      if (!bound.has(a)) await run('ip', ['addr', 'add', `${a}/32`, 'dev', DUMMY_INTERFACE]);
    const ipset = ipsetScript(r.sets, full ? undefined : this.appliedSets);
    if (ipset) await run('ipset', ['restore', '-exist'], ipset + '\n');
    this.appliedSets = new Map([...r.sets].map(([name, s]) => [name, new Set(s.entries)]));
    const saved = (await run('iptables-save', [])).stdout;
    const missing = JUMPS.filter(([, from, to]) => !new RegExp(`^-A ${from} .*-j ${to}$`, 'm').test(saved));
    let text = r.iptables;
    for (const [table, from, to] of missing) {
      text = text.replace(`*${table}\n`, `*${table}\n:${to} - [0:0]\n-I ${from} 1 -j ${to}\n`);
    }
    await run('iptables-restore', ['--wait=5', '--noflush'], text);
    const nodeAddrs = new Set(nodePortIPs(state.node.nodeIPs, state.node.nodePortAddresses));
    const current = parseIpvsadmSave((await run('ipvsadm-save', ['-n'])).stdout);
    const diff = ipvsadmDiff(
      current,
      r.virtualServers,
      (vs) => bound.has(vs.address) || wanted.has(vs.address) || nodeAddrs.has(vs.address),
    );
    if (diff.length > 0) await run('ipvsadm', ['--restore'], diff.join('\n') + '\n');
    for (const a of bound)
      if (!wanted.has(a)) await run('ip', ['addr', 'del', `${a}/32`, 'dev', DUMMY_INTERFACE]);
    return diff.length;
  }

  private async boundAddresses(): Promise<Set<string>> {
    const r = await this.runner.run('ip', ['-4', '-o', 'addr', 'show', 'dev', DUMMY_INTERFACE]);
    return new Set([...r.stdout.matchAll(/inet (\d+\.\d+\.\d+\.\d+)\/32/g)].map((m) => m[1]!));
  }

  /** Removes the virtual servers on our addresses, kube-ipvs0, our ipsets and iptables chains. */
  async cleanup(): Promise<void> {
    if (!this.available) return; // nothing of ours can have been applied
    const bound = await this.boundAddresses();
    const current = parseIpvsadmSave((await this.runner.run('ipvsadm-save', ['-n'])).stdout);
    const del = [...current.values()].filter((vs) => bound.has(vs.address)).map((vs) => `-D ${vs.spec}`);
    if (del.length) await runChecked(this.runner, 'ipvsadm', ['--restore'], { input: del.join('\n') + '\n' });
    await this.runner.run('ip', ['link', 'del', DUMMY_INTERFACE]);
    const saved = (await this.runner.run('iptables-save', [])).stdout;
    const out: string[] = [];
    for (const table of ['nat', 'filter']) {
      const chains = [
        'KUBE-SERVICES',
        'KUBE-POSTROUTING',
        'KUBE-NODE-PORT',
        'KUBE-LOAD-BALANCER',
        'KUBE-MARK-MASQ',
        'KUBE-FORWARD',
        'KUBE-PROXY-FIREWALL',
      ].filter(
        (c) => saved.includes(`*${table}`) && new RegExp(`^:${c} `, 'm').test(sectionOf(saved, table)),
      );
      if (!chains.length) continue;
      out.push(`*${table}`);
      for (const c of chains) out.push(`:${c} - [0:0]`);
      for (const line of sectionOf(saved, table).split('\n')) {
        const m = /^-A (PREROUTING|INPUT|FORWARD|OUTPUT|POSTROUTING) .*-j (\S+)$/.exec(line);
        if (m && chains.includes(m[2]!)) out.push(`-D${line.slice(2)}`);
      }
      for (const c of chains) out.push(`-X ${c}`);
      out.push('COMMIT');
    }
    if (out.length)
      await runChecked(this.runner, 'iptables-restore', ['--wait=5', '--noflush'], {
        input: out.join('\n') + '\n',
      });
    for (const line of (await this.runner.run('ipset', ['list', '-n'])).stdout.split('\n')) {
      if (line.startsWith('KUBE-')) await this.runner.run('ipset', ['destroy', line.trim()]);
    }
    this.linkReady = false;
  }
}

function sectionOf(save: string, table: string): string {
  const start = save.indexOf(`*${table}\n`);
  if (start < 0) return '';
  const end = save.indexOf('COMMIT', start);
  return save.slice(start, end < 0 ? undefined : end);
}

/**
 * Checks what was rendered: specs unique, ports and weights valid. (A virtual server may have no real
 * servers: internalTrafficPolicy Local without a local endpoint drops traffic, as upstream.)
 */
export function verify(r: IpvsRender): void {
  const seen = new Set<string>();
  for (const vs of r.virtualServers) {
    const spec = `${vs.protocol} ${vs.address}:${vs.port}`;
    if (seen.has(spec)) throw new Error(`IPVS: two virtual servers for ${spec} (${vs.servicePort})`);
    seen.add(spec);
    if (vs.port < 1 || vs.port > 65535) throw new Error(`IPVS: ${spec} has an invalid port`);
    for (const rs of vs.realServers) {
      if (rs.port < 1 || rs.port > 65535 || rs.weight < 0)
        throw new Error(`IPVS: ${spec} has an invalid real server ${rs.address}:${rs.port}`);
    }
  }
}
