import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { systemEnv } from '@nodelet/proxy';
import { deleteAtExit, forgetAtExit } from '@nodelet/proxy/testing';
import { kubectlPath, type NodeletUp, run } from '../e2e-containerd/nodelet-up.js';
import { MAIN, type RunResult } from '../test-helpers.js';

/**
 * Helpers of the proxy's end-to-end tests, beside `NodeletUp` (which runs `nodelet up` on the host or in
 * a network namespace the test created, where kubectl, iptables-save and nft then run too, and whatever
 * the proxy programs dies with the namespace): namespaces, `nodelet proxy`, and the rules as a user
 * reads them (iptables-save, nft list).
 */

/** A network namespace of the test's own (`nlp-<random>-up`), loopback up; `destroy` removes it. */
export class TestNetns {
  private constructor(readonly name: string) {}

  static async create(): Promise<TestNetns> {
    const ns = new TestNetns(`nlp-${randomBytes(3).toString('hex')}-up`);
    const add = await run(undefined, 'ip', ['netns', 'add', ns.name]);
    if (add.code !== 0) throw new Error(`ip netns add ${ns.name}: ${add.stderr}`);
    deleteAtExit(ns.name);
    const lo = await run(ns.name, 'ip', ['link', 'set', 'lo', 'up']);
    if (lo.code !== 0) {
      await ns.destroy();
      throw new Error(`ip link set lo up in ${ns.name}: ${lo.stderr}`);
    }
    return ns;
  }

  /** Kills what still runs inside (only the test's processes can be there), then deletes it. */
  async destroy(): Promise<void> {
    const pids = await run(undefined, 'ip', ['netns', 'pids', this.name]);
    for (const pid of pids.stdout.split('\n').filter(Boolean)) {
      try {
        process.kill(Number(pid), 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await run(undefined, 'ip', ['netns', 'del', this.name]);
    forgetAtExit(this.name);
  }
}

/** `nodelet proxy …` to completion (on the host or in `netns`). */
export function nodeletProxy(netns: string | undefined, args: string[]): Promise<RunResult> {
  return run(netns, process.execPath, [MAIN, 'proxy', ...args]);
}

/** The nat table as iptables-save prints it, from the nf_tables back end and the legacy one. */
export async function natRules(netns?: string): Promise<string> {
  const [nft, legacy] = await Promise.all([
    run(netns, 'iptables-nft-save', ['-t', 'nat']),
    run(netns, 'iptables-legacy-save', ['-t', 'nat']),
  ]);
  return `${nft.stdout}\n${legacy.stdout}`;
}

/** Every KUBE-* chain in the nat and filter tables of either back end. */
export async function kubeChains(netns?: string): Promise<string[]> {
  const out: string[] = [];
  for (const save of ['iptables-nft-save', 'iptables-legacy-save']) {
    const r = await run(netns, save, []);
    for (const m of r.stdout.matchAll(/^:(KUBE-\S+)/gm)) out.push(`${save}: ${m[1]}`);
  }
  return out;
}

/**
 * Where the iptables rules send `clusterIP:port` (TCP): the DNAT destinations of the endpoint chains of
 * its KUBE-SERVICES rule, sorted; undefined when KUBE-SERVICES has no rule for it.
 */
export function dnatTargets(rules: string, clusterIP: string, port: number): string[] | undefined {
  const lines = rules.split('\n').filter((l) => l.startsWith('-A '));
  const chainOf = (l: string) => l.split(' ')[1]!;
  const jump = (l: string) => / -j (\S+)/.exec(l)?.[1];
  const entry = lines.find(
    (l) =>
      chainOf(l) === 'KUBE-SERVICES' &&
      l.includes(` -d ${clusterIP}/32 `) &&
      new RegExp(` --dport ${port}( |$)`).test(l) &&
      /-j KUBE-(SVC|SVL)-/.test(l),
  );
  if (!entry) return undefined;
  const serviceChain = jump(entry)!;
  const targets: string[] = [];
  for (const l of lines) {
    if (chainOf(l) !== serviceChain) continue;
    const sep = jump(l);
    if (!sep?.startsWith('KUBE-SEP-')) continue;
    for (const s of lines) {
      const to = / --to-destination (\S+)/.exec(s);
      if (chainOf(s) === sep && to) targets.push(to[1]!);
    }
  }
  return targets.sort();
}

/** `nft list table ip kube-proxy`, or '' when there is none. */
export async function nftTable(netns?: string): Promise<string> {
  const r = await run(netns, 'nft', ['list', 'table', 'ip', 'kube-proxy']);
  return r.code === 0 ? r.stdout : '';
}

/**
 * Where the nftables rules send `clusterIP:port` (TCP): the DNAT destinations of the service chain its
 * `service-ips` element jumps to, sorted; undefined when the map has no element for it.
 */
export function nftDnatTargets(table: string, clusterIP: string, port: number): string[] | undefined {
  const ip = clusterIP.replace(/\./g, '\\.');
  const chain = new RegExp(`${ip} \\. tcp \\. ${port} : goto ([^\\s,}]+)`).exec(table)?.[1];
  if (!chain) return undefined;
  const chains = new Map<string, string>();
  for (const m of table.matchAll(/^\tchain (\S+) \{\n([\s\S]*?)^\t\}/gm)) chains.set(m[1]!, m[2]!);
  const targets: string[] = [];
  for (const m of (chains.get(chain) ?? '').matchAll(/goto (endpoint-[^\s,}]+)/g)) {
    const to = /dnat to (\S+)/.exec(chains.get(m[1]!) ?? '');
    if (to) targets.push(to[1]!);
  }
  return [...new Set(targets)].sort();
}

/**
 * `kubectl get endpointslices -w` for one Service: when each change arrived, and the addresses the proxy
 * may send to then (over all of its slices), as upstream chooses them: the ready endpoints, or when none
 * is ready, the serving ones that are terminating.
 */
export class SliceWatch {
  readonly changes: { at: number; usable: string[] }[] = [];
  private readonly child: ChildProcess;
  private readonly slices = new Map<string, { ip: string; ready: boolean; serving: boolean }[]>();
  private buffer = '';

  constructor(up: NodeletUp, service: string) {
    const args = [
      '--kubeconfig',
      up.kubeconfig,
      '--cache-dir',
      join(up.dataDir, 'kubectl-cache'),
      'get',
      'endpointslices',
      '-l',
      `kubernetes.io/service-name=${service}`,
      '--watch',
      '-o',
      // (A range template stops printing after the first object of a watch; a JSON value does not.)
      'jsonpath={.metadata.name} {.endpoints}{"\\n"}',
    ];
    this.child = up.netns
      ? spawn('ip', ['netns', 'exec', up.netns, kubectlPath, ...args], { env: systemEnv() })
      : spawn(kubectlPath, args, { env: systemEnv() });
    this.child.stdout!.setEncoding('utf8');
    this.child.stdout!.on('data', (d: string) => {
      const at = Date.now();
      this.buffer += d;
      let nl: number;
      while ((nl = this.buffer.indexOf('\n')) >= 0) {
        const line = this.buffer.slice(0, nl).trim();
        this.buffer = this.buffer.slice(nl + 1);
        if (!line) continue;
        const space = line.indexOf(' ');
        const name = space < 0 ? line : line.slice(0, space);
        const json = space < 0 ? '' : line.slice(space + 1).trim();
        const parsed = (json ? JSON.parse(json) : []) as {
          addresses?: string[];
          conditions?: { ready?: boolean; serving?: boolean };
        }[];
        const endpoints = parsed.map((e) => ({
          ip: e.addresses?.[0] ?? '',
          ready: e.conditions?.ready === true,
          serving: e.conditions?.serving === true,
        }));
        this.slices.set(name, endpoints);
        const all = [...this.slices.values()].flat();
        const ready = all.filter((e) => e.ready);
        const usable = (ready.length > 0 ? ready : all.filter((e) => e.serving)).map((e) => e.ip).sort();
        this.changes.push({ at, usable });
      }
    });
  }

  /** The first change at or after `since` that left exactly `usable` (as a set). */
  find(usable: string[], since: number): { at: number; usable: string[] } | undefined {
    const want = [...usable].sort().join(',');
    return this.changes.find((c) => c.at >= since && c.usable.join(',') === want);
  }

  stop(): void {
    if (this.child.exitCode === null) this.child.kill('SIGTERM');
  }
}
