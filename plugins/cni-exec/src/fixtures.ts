/**
 * Test fixtures: temporary configuration/binary/cache directories and a scriptable fake CNI plugin.
 * Not exported from the package.
 */
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PodNetworkRequest } from '@nodelet/cni';
import { RealClock } from '@nodelet/kernel';

/**
 * A CNI plugin written in plain Node, driven by a `fake` object in its own configuration (which the
 * runtime passes through unchanged):
 *
 *   record      file to append one JSON line per invocation to: {phase, type, command, env, conf, pid}
 *   fail        {ADD|DEL|CHECK: {code, msg, details}} — print that error object, exit 1
 *   crash       {ADD|...: "text"} — print text on stderr, exit 2, nothing on stdout
 *   sleepMs     {ADD|...: ms} — wait before answering
 *   child       true — start a `sleep 30` in the plugin's process group and record its pid
 *   output      print this string as the ADD result, verbatim
 *   ip, gateway the address of a first-in-chain ADD (default 10.9.0.2/24 via 10.9.0.1)
 *   nameserver  a chained ADD appends it to prevResult.dns.nameservers
 *
 * VERSION answers with the list in `<binary>.versions` (JSON), by default 0.1.0 … 1.1.0.
 */
export const FAKE_PLUGIN = `
const fs = require('fs');
const chunks = [];
process.stdin.on('data', (c) => chunks.push(c));
process.stdin.on('end', () => main(Buffer.concat(chunks).toString()));
function main(text) {
  const env = {};
  for (const k of Object.keys(process.env)) if (k.startsWith('CNI_')) env[k] = process.env[k];
  const command = env.CNI_COMMAND;
  if (command === 'VERSION') {
    let versions = ['0.1.0', '0.2.0', '0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'];
    try { versions = JSON.parse(fs.readFileSync(__filename + '.versions', 'utf8')); } catch {}
    process.stdout.write(JSON.stringify({ cniVersion: JSON.parse(text).cniVersion, supportedVersions: versions }));
    return;
  }
  const conf = JSON.parse(text);
  const fake = conf.fake || {};
  const record = (entry) => {
    if (fake.record) fs.appendFileSync(fake.record, JSON.stringify({ ...entry, t: Date.now() }) + '\\n');
  };
  record({ phase: 'start', type: conf.type, command, env, conf, pid: process.pid });
  if (fake.child) {
    const child = require('child_process').spawn('sleep', ['30'], { stdio: 'ignore' });
    record({ phase: 'child', pid: child.pid });
  }
  const exit = (code) => { record({ phase: 'end', type: conf.type, command }); process.exit(code); };
  const answer = () => {
    const fail = fake.fail && fake.fail[command];
    if (fail) { process.stdout.write(JSON.stringify({ cniVersion: conf.cniVersion, ...fail })); return exit(1); }
    const crash = fake.crash && fake.crash[command];
    if (crash) { process.stderr.write(crash); return exit(2); }
    if (command !== 'ADD') return exit(0);
    if (fake.output !== undefined) { process.stdout.write(fake.output); return exit(0); }
    let result;
    if (conf.prevResult) {
      result = conf.prevResult;
      if (fake.nameserver) {
        const dns = result.dns || {};
        result = { ...result, dns: { ...dns, nameservers: [...(dns.nameservers || []), fake.nameserver] } };
      }
    } else {
      const legacy = !conf.cniVersion.startsWith('1.');
      result = {
        cniVersion: conf.cniVersion,
        interfaces: [
          { name: 'fakebr0', mac: '02:00:00:00:00:aa' },
          { name: env.CNI_IFNAME, mac: '02:00:00:00:00:01', sandbox: env.CNI_NETNS },
        ],
        ips: [{ ...(legacy ? { version: '4' } : {}), address: fake.ip || '10.9.0.2/24', gateway: fake.gateway || '10.9.0.1', interface: 1 }],
        routes: [{ dst: '0.0.0.0/0' }],
        dns: {},
      };
    }
    process.stdout.write(JSON.stringify(result));
    exit(0);
  };
  const sleep = fake.sleepMs && fake.sleepMs[command];
  if (sleep) setTimeout(answer, sleep); else answer();
}
`;

export interface TempLayout {
  readonly root: string;
  readonly confDir: string;
  readonly binDir: string;
  readonly cacheDir: string;
  /** The fake plugins' record file. */
  readonly record: string;
  cleanup(): void;
}

export function tempLayout(prefix = 'nodelet-cni-'): TempLayout {
  const root = mkdtempSync(join(tmpdir(), prefix));
  const layout = {
    root,
    confDir: join(root, 'net.d'),
    binDir: join(root, 'bin'),
    cacheDir: join(root, 'cache'),
    record: join(root, 'record.jsonl'),
    cleanup: () => rmSync(root, { recursive: true, force: true }),
  };
  mkdirSync(layout.confDir);
  mkdirSync(layout.binDir);
  return layout;
}

/** Installs the fake plugin as `<binDir>/<name>`; `versions` is what its VERSION reports. */
export function installFakePlugin(binDir: string, name: string, versions?: readonly string[]): string {
  const path = join(binDir, name);
  writeFileSync(path, `#!${process.execPath}\n${FAKE_PLUGIN}`);
  chmodSync(path, 0o755);
  if (versions) writeFileSync(`${path}.versions`, JSON.stringify(versions));
  return path;
}

export function writeJson(path: string, value: unknown): void {
  writeFileSync(path, typeof value === 'string' ? value : JSON.stringify(value, null, 2));
}

export interface Invocation {
  readonly phase: 'start' | 'end' | 'child';
  readonly type: string;
  readonly command: string;
  readonly env: Record<string, string>;
  readonly conf: Record<string, any>;
  readonly pid: number;
  readonly t: number;
}

/** Every invocation recorded so far (start lines only unless `all`). */
export function readRecord(path: string, all = false): Invocation[] {
  let text = '';
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return [];
  }
  const lines = text
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Invocation);
  return all ? lines : lines.filter((l) => l.phase === 'start');
}

export function podRequest(overrides: Partial<PodNetworkRequest> = {}): PodNetworkRequest {
  return {
    podUid: '2b6d5a1e-7c33-4a43-9d1f-0f2b1c9e7a10',
    podName: 'web-0',
    namespace: 'default',
    containerId: 'c0ffee00d1',
    netnsPath: '/var/run/netns/fake-ns',
    ...overrides,
  };
}

/** Polls `check` until it is true or `timeoutMs` passes; resolves to the last answer. */
export async function waitFor(check: () => boolean, timeoutMs: number, stepMs = 20): Promise<boolean> {
  // Real time: the plugins under test are real processes.
  const clock = new RealClock();
  const deadline = clock.deadline(timeoutMs);
  try {
    for (;;) {
      if (check()) return true;
      if (deadline.expired) return false;
      await clock.sleep(stepMs);
    }
  } finally {
    deadline.cancel();
  }
}

/** Whether a process runs (a zombie, killed but not yet reaped, counts as gone). */
export function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}
