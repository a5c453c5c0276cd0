import { execFile, execFileSync, spawn } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import { promisify } from 'node:util';
import { systemEnv } from '../exec.js';

const execFileAsync = promisify(execFile);
/** System tools first in PATH: under npx, node_modules/.bin may shadow them (@vercel/nft's `nft`). */
const run = (command: string, args: string[]) =>
  execFileAsync(command, args, { env: systemEnv(), maxBuffer: 256 * 1024 * 1024 });

/**
 * Network namespaces for real-traffic tests. Everything a test programs lives inside namespaces it
 * creates (`nlp-<random>-…`): a "node" namespace where the proxy's rules go, a client namespace, and one
 * namespace per backend, joined by veth pairs created inside the node namespace — nothing is created in
 * or changed on the host's own namespace. `destroy()` stops the processes it started (by PID) and deletes
 * the namespaces, which removes their links, addresses, rules, chains and tables with them.
 *
 *            client ns                 node ns (rules)                   backend ns ×3
 *      eth0 10.200.N.2/24 ── vc 10.200.N.1/24      vbK 172.31.(M+K).1/24 ── eth0 172.31.(M+K).2/24
 *                                     uplink (veth, peer down; default route)
 */
export interface NetnsSupport {
  ok: boolean;
  reason?: string;
}

export async function netnsSupport(): Promise<NetnsSupport> {
  if (process.platform !== 'linux') return { ok: false, reason: 'not Linux' };
  if (process.getuid?.() !== 0)
    return { ok: false, reason: 'not root (network namespaces need CAP_NET_ADMIN)' };
  const probe = `nlp-${randomBytes(3).toString('hex')}-probe`;
  try {
    await run('ip', ['netns', 'add', probe]);
    await run('ip', ['netns', 'del', probe]);
    return { ok: true };
  } catch (err) {
    await run('ip', ['netns', 'del', probe]).catch(() => undefined);
    return { ok: false, reason: `ip netns does not work here: ${(err as Error).message.split('\n')[0]}` };
  }
}

export async function commandExists(command: string): Promise<boolean> {
  try {
    await run('sh', ['-c', `command -v ${command}`]);
    return true;
  } catch {
    return false;
  }
}

/**
 * Namespaces a test made and has not deleted yet. Should the test process end before its teardown (ava's
 * timeout, an uncaught error), an exit hook kills what runs inside them and deletes them, so no
 * namespace or helper outlives the run.
 */
const liveNamespaces = new Set<string>();
let exitHookInstalled = false;

/** Registers namespace `ns` for deletion at process exit; `forgetAtExit` when the test deleted it. */
export function deleteAtExit(ns: string): void {
  liveNamespaces.add(ns);
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const name of [...liveNamespaces].reverse()) {
      const sync = (args: string[]) =>
        execFileSync('ip', args, { env: systemEnv(), encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
      try {
        for (const pid of sync(['netns', 'pids', name]).split('\n').filter(Boolean)) {
          try {
            process.kill(Number(pid), 'SIGKILL');
          } catch {
            // already gone
          }
        }
        sync(['netns', 'del', name]);
      } catch {
        // already deleted
      }
    }
  });
}

export function forgetAtExit(ns: string): void {
  liveNamespaces.delete(ns);
}

/**
 * A TCP server in a backend namespace that answers each connection with its name. It exits when its
 * stdin closes, so it never outlives the test process that started it.
 */
const SERVER = `
process.stdin.on('end', () => process.exit(0)).resume();
const net = require('node:net');
const [name, port] = process.argv.slice(1);
const s = net.createServer((c) => { c.on('error', () => {}); c.end(name + '\\n'); });
s.listen(Number(port), '0.0.0.0', () => process.stdout.write('ready\\n'));
`;

/** Connects `count` times (one after the other), printing what each connection got as a JSON array. */
const CLIENT = `
const net = require('node:net');
const [host, port, count, timeout] = process.argv.slice(1);
const results = [];
function once() {
  return new Promise((resolve) => {
    let data = '';
    let done = false;
    const finish = (r) => { if (!done) { done = true; s.destroy(); resolve(r); } };
    const s = net.connect({ host, port: Number(port) });
    s.setTimeout(Number(timeout), () => finish('ETIMEDOUT'));
    s.on('data', (d) => { data += d; });
    s.on('end', () => finish(data.trim() || 'EMPTY'));
    s.on('error', (e) => finish(e.code || 'ERROR'));
  });
}
(async () => {
  for (let i = 0; i < Number(count); i++) results.push(await once());
  process.stdout.write(JSON.stringify(results) + '\\n');
})();
`;

export interface TopologyOptions {
  backends?: number;
}

export class NetnsTopology {
  readonly id: string;
  readonly node: string;
  readonly client: string;
  readonly backends: string[];
  readonly nodeClientIP: string;
  readonly clientIP: string;
  readonly backendIPs: string[];
  readonly backendGatewayIPs: string[];
  private readonly pids: number[] = [];
  private readonly created: string[] = [];

  private constructor(backends: number) {
    this.id = randomBytes(3).toString('hex');
    const n = randomInt(1, 255);
    const m = randomInt(1, 250);
    this.node = `nlp-${this.id}-node`;
    this.client = `nlp-${this.id}-c`;
    this.backends = Array.from({ length: backends }, (_, i) => `nlp-${this.id}-b${i + 1}`);
    this.nodeClientIP = `10.200.${n}.1`;
    this.clientIP = `10.200.${n}.2`;
    this.backendGatewayIPs = this.backends.map((_, i) => `172.31.${m + i}.1`);
    this.backendIPs = this.backends.map((_, i) => `172.31.${m + i}.2`);
  }

  static async create(options: TopologyOptions = {}): Promise<NetnsTopology> {
    const t = new NetnsTopology(options.backends ?? 3);
    try {
      await t.setup();
    } catch (err) {
      await t.destroy();
      throw err;
    }
    return t;
  }

  /** Runs a command inside namespace `ns`. */
  async exec(ns: string, command: string, args: string[] = [], input?: string): Promise<string> {
    if (input === undefined) return (await run('ip', ['netns', 'exec', ns, command, ...args])).stdout;
    return new Promise((resolve, reject) => {
      const child = spawn('ip', ['netns', 'exec', ns, command, ...args], { env: systemEnv() });
      let out = '';
      let err = '';
      child.stdout.on('data', (d) => (out += d));
      child.stderr.on('data', (d) => (err += d));
      child.on('close', (code) =>
        code === 0 ? resolve(out) : reject(new Error(`${command}: ${err || out}`)),
      );
      child.stdin.end(input);
    });
  }

  private async setup(): Promise<void> {
    for (const ns of [this.node, this.client, ...this.backends]) {
      await run('ip', ['netns', 'add', ns]);
      this.created.push(ns);
      deleteAtExit(ns);
      await this.exec(ns, 'ip', ['link', 'set', 'lo', 'up']);
    }
    await this.exec(this.node, 'sysctl', ['-qw', 'net.ipv4.ip_forward=1']);
    // An uplink with a default route, as a real node has: traffic to a ClusterIP without rules is then
    // routed (and reaches the FORWARD chain) instead of being refused by routing as unreachable.
    // (A veth whose peer stays down: no dummy module is needed, and nothing leaves the namespace.)
    await this.exec(this.node, 'ip', [
      'link',
      'add',
      'uplink',
      'type',
      'veth',
      'peer',
      'name',
      'uplink-peer',
    ]);
    await this.exec(this.node, 'ip', ['link', 'set', 'uplink', 'up']);
    await this.exec(this.node, 'ip', ['route', 'add', 'default', 'dev', 'uplink']);
    await this.link(this.client, 'vc', this.nodeClientIP, this.clientIP);
    for (const [i, ns] of this.backends.entries()) {
      await this.link(ns, `vb${i + 1}`, this.backendGatewayIPs[i]!, this.backendIPs[i]!);
    }
  }

  /** A veth pair from the node namespace into `peerNs`, with a /24 on each side and a default route back. */
  private async link(peerNs: string, nodeSide: string, nodeIP: string, peerIP: string): Promise<void> {
    await this.exec(this.node, 'ip', [
      'link',
      'add',
      nodeSide,
      'type',
      'veth',
      'peer',
      'name',
      'eth0',
      'netns',
      peerNs,
    ]);
    await this.exec(this.node, 'ip', ['addr', 'add', `${nodeIP}/24`, 'dev', nodeSide]);
    await this.exec(this.node, 'ip', ['link', 'set', nodeSide, 'up']);
    await this.exec(peerNs, 'ip', ['addr', 'add', `${peerIP}/24`, 'dev', 'eth0']);
    await this.exec(peerNs, 'ip', ['link', 'set', 'eth0', 'up']);
    await this.exec(peerNs, 'ip', ['route', 'add', 'default', 'via', nodeIP]);
  }

  /** Starts a TCP server in each backend namespace answering with the namespace's index name (b1, b2, …). */
  async startServers(port = 8080): Promise<string[]> {
    const names: string[] = [];
    for (const [i, ns] of this.backends.entries()) {
      const name = `b${i + 1}`;
      const child = spawn('ip', ['netns', 'exec', ns, process.execPath, '-e', SERVER, name, String(port)], {
        stdio: ['pipe', 'pipe', 'inherit'],
        env: systemEnv(),
      });
      this.pids.push(child.pid!);
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`server in ${ns} did not start`)), 10_000);
        child.stdout.once('data', () => {
          clearTimeout(timer);
          resolve();
        });
        child.once('exit', (code) => reject(new Error(`server in ${ns} exited with ${code}`)));
      });
      names.push(name);
    }
    return names;
  }

  /** Connects `count` times from the client namespace; each result is a backend name or an error code. */
  async connect(host: string, port: number, count: number, timeoutMs = 2000): Promise<string[]> {
    const out = await this.exec(this.client, process.execPath, [
      '-e',
      CLIENT,
      host,
      String(port),
      String(count),
      String(timeoutMs),
    ]);
    return JSON.parse(out) as string[];
  }

  /** Stops the servers this topology started (by PID) and deletes every namespace it created. */
  async destroy(): Promise<void> {
    for (const pid of this.pids.splice(0)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    // `ip netns exec` forks the server; kill what is left inside each namespace by PID.
    for (const ns of [...this.created].reverse()) {
      const pids = await run('ip', ['netns', 'pids', ns]).then(
        (r) => r.stdout.split('\n').filter(Boolean),
        () => [],
      );
      for (const pid of pids) {
        try {
          process.kill(Number(pid), 'SIGKILL');
        } catch {
          // already gone
        }
      }
      await run('ip', ['netns', 'del', ns]).catch(() => undefined);
      forgetAtExit(ns);
    }
    this.created.length = 0;
  }
}

/** Counts how often each value occurs. */
export function tally(values: readonly string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const v of values) out[v] = (out[v] ?? 0) + 1;
  return out;
}
