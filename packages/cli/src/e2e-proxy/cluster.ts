import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { systemEnv } from '@nodelet/proxy';
import { mountsUnder } from '../e2e-containerd/helpers.js';
import { kubectlPath } from '../e2e-containerd/nodelet-up.js';
import { type ChildExit, TestChild } from '../e2e-containerd/test-child.js';
import { MAIN, pollUntil, type RunResult } from '../test-helpers.js';

/**
 * Helpers of the proxy's end-to-end tests: `nodelet up` with its proxy, on the host or inside a network
 * namespace the test created (then kubectl, iptables-save and nft run in there too, and whatever the
 * proxy programs dies with the namespace); the rules as a user reads them (iptables-save, nft list).
 */

/** Runs a command on the host, or inside network namespace `netns`; never rejects. */
export function run(
  netns: string | undefined,
  command: string,
  args: string[],
  options: { input?: string; timeoutMs?: number } = {},
): Promise<RunResult> {
  const [file, argv] = netns ? ['ip', ['netns', 'exec', netns, command, ...args]] : [command, args];
  return new Promise((resolve) => {
    const child = execFile(
      file,
      argv,
      { timeout: options.timeoutMs ?? 60_000, encoding: 'utf8', env: systemEnv(), maxBuffer: 64 << 20 },
      (err, stdout, stderr) =>
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) || 1 : 0, stdout, stderr }),
    );
    if (options.input !== undefined) child.stdin?.end(options.input);
  });
}

/** A network namespace of the test's own (`nlp-<random>-up`), loopback up; `destroy` removes it. */
export class TestNetns {
  private constructor(readonly name: string) {}

  static async create(): Promise<TestNetns> {
    const ns = new TestNetns(`nlp-${randomBytes(3).toString('hex')}-up`);
    const add = await run(undefined, 'ip', ['netns', 'add', ns.name]);
    if (add.code !== 0) throw new Error(`ip netns add ${ns.name}: ${add.stderr}`);
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
  }
}

/** `nodelet up --data-dir … --port 0 …`, on the host or in a namespace, until `stop()`. */
export class UpProcess {
  readonly kubeconfig: string;
  private stdoutText = '';
  private stderrText = '';
  private readonly proc: TestChild;

  private constructor(
    readonly dataDir: string,
    readonly netns: string | undefined,
    child: ChildProcess,
  ) {
    this.kubeconfig = join(dataDir, 'kubeconfig');
    child.stdout!.setEncoding('utf8');
    child.stderr!.setEncoding('utf8');
    child.stdout!.on('data', (d: string) => (this.stdoutText += d));
    child.stderr!.on('data', (d: string) => (this.stderrText += d));
    this.proc = new TestChild(child);
  }

  /** A new data directory, with `config` (a NodeletConfiguration's text) written to it when given. */
  static newDataDir(config?: string): { dataDir: string; configPath?: string } {
    const dataDir = mkdtempSync(join(tmpdir(), 'nodelet-e2e-proxy-'));
    if (config === undefined) return { dataDir };
    const configPath = join(dataDir, 'nodelet.yaml');
    writeFileSync(configPath, config);
    return { dataDir, configPath };
  }

  /** Starts it and waits (bounded) until it prints its kubectl line. */
  static async start(dataDir: string, args: string[], netns?: string): Promise<UpProcess> {
    const argv = [MAIN, 'up', '--data-dir', dataDir, '--port', '0', ...args];
    // `ip netns exec` execs the command (no fork), so the child's PID is nodelet's.
    const child = netns
      ? spawn('ip', ['netns', 'exec', netns, process.execPath, ...argv], {
          stdio: ['ignore', 'pipe', 'pipe'],
          env: systemEnv(),
        })
      : spawn(process.execPath, argv, { stdio: ['ignore', 'pipe', 'pipe'], env: systemEnv() });
    const up = new UpProcess(dataDir, netns, child);
    await pollUntil(
      'nodelet up to print its kubectl line',
      async () => {
        if (up.proc.exited) throw new Error(`nodelet up exited during startup:\n${up.stderrText}`);
        return /^try: /m.test(up.stdoutText) ? true : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 50, describe: () => `${up.stdoutText}\n${up.stderrText}` },
    );
    return up;
  }

  stdout(): string {
    return this.stdoutText;
  }

  stderr(): string {
    return this.stderrText;
  }

  get exited(): boolean {
    return this.proc.exited;
  }

  /** The proxy's /healthz URL from the startup lines. */
  get healthz(): string | undefined {
    return /healthz (http:\/\/\S+)/.exec(this.stdoutText)?.[1];
  }

  kubectl(args: string[], input?: string): Promise<RunResult> {
    return run(
      this.netns,
      kubectlPath,
      ['--kubeconfig', this.kubeconfig, '--cache-dir', join(this.dataDir, 'kubectl-cache'), ...args],
      input === undefined ? {} : { input },
    );
  }

  /** kubectl that must succeed; returns its stdout. */
  async kubectlOk(args: string[], input?: string): Promise<string> {
    const r = await this.kubectl(args, input);
    if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr || r.stdout}`);
    return r.stdout;
  }

  async waitNodeReady(node: string): Promise<void> {
    await pollUntil(
      `node ${node} to be Ready`,
      async () => {
        const r = await this.kubectl(['get', 'node', node, '--no-headers']);
        return /\sReady\s/.test(r.stdout) ? true : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 200, describe: () => this.stderrText.slice(-3000) },
    );
  }

  /** Pod IPs of the Running pods with this label, by pod name. */
  async podIPs(selector: string): Promise<Map<string, string>> {
    const out = await this.kubectlOk([
      'get',
      'pods',
      '-l',
      selector,
      '-o',
      'jsonpath={range .items[*]}{.metadata.name}={.status.podIP}={.status.phase}{"\\n"}{end}',
    ]);
    const ips = new Map<string, string>();
    for (const line of out.split('\n')) {
      const [name, ip, phase] = line.split('=');
      if (name && ip && phase === 'Running') ips.set(name, ip);
    }
    return ips;
  }

  /** SIGTERM, SIGKILL after `graceMs`; resolves with how it ended. */
  stop(graceMs = 20_000): Promise<ChildExit> {
    return this.proc.stop(graceMs);
  }

  /** Removes the data directory (after unmounting what a kubelet left mounted under it). */
  dispose(): void {
    for (const { point } of mountsUnder(this.dataDir + '/').sort((a, b) => b.point.length - a.point.length)) {
      void run(undefined, 'umount', ['-l', point]);
    }
    rmSync(this.dataDir, { recursive: true, force: true });
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

  constructor(up: UpProcess, service: string) {
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
