/**
 * Test support: the control plane of test-apiserver-main.ts in a child process — what a test needs to
 * measure the server's own memory and to see that it never dies.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { ControlPlaneOptions } from './control-plane.js';

export interface ApiServerProcess {
  url: string;
  port: number;
  ca: string;
  cert: string;
  key: string;
  child: ChildProcess;
  /** What the child wrote to stderr (its error logs). */
  stderr(): string;
  /** The child's resident set size in bytes (from /proc). */
  rss(): number;
  /** Whether the child is still running. */
  alive(): boolean;
  stop(): Promise<void>;
}

export async function startApiServerProcess(
  options: Partial<ControlPlaneOptions> = {},
): Promise<ApiServerProcess> {
  const main = fileURLToPath(new URL('./test-apiserver-main.js', import.meta.url));
  const child = spawn(process.execPath, [main, JSON.stringify(options)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-64 * 1024)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const ready = await new Promise<{ url: string; ca: string; cert: string; key: string }>(
    (resolve, reject) => {
      let out = '';
      child.stdout!.on('data', (d: Buffer) => {
        out += d.toString();
        const nl = out.indexOf('\n');
        if (nl >= 0) resolve(JSON.parse(out.slice(0, nl)));
      });
      child.once('exit', (code) => reject(new Error(`the API server exited (${code}): ${stderr}`)));
    },
  );
  return {
    ...ready,
    port: Number(new URL(ready.url).port),
    child,
    stderr: () => stderr,
    rss: () => {
      const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
      return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024;
    },
    alive: () => child.exitCode === null && child.signalCode === null,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}
