/**
 * Test support: the control plane of test-apiserver-main.ts in a child process — what a test needs to
 * measure the server's own memory and to see that it never dies.
 */
import { spawn, type ChildProcess } from 'node:child_process';
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
  /** The child's resident set size right after a full garbage collection. */
  rssAfterGc(): Promise<number>;
  /** Whether the child is still running. */
  alive(): boolean;
  stop(): Promise<void>;
}

export async function startApiServerProcess(
  options: Partial<ControlPlaneOptions> = {},
): Promise<ApiServerProcess> {
  const main = fileURLToPath(new URL('./test-apiserver-main.js', import.meta.url));
  const child = spawn(process.execPath, ['--expose-gc', main, JSON.stringify(options)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-64 * 1024)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  // Each line the child prints, to whoever waits for the next one.
  const waiting: ((line: string) => void)[] = [];
  let out = '';
  child.stdout!.on('data', (d: Buffer) => {
    out += d.toString();
    for (let nl = out.indexOf('\n'); nl >= 0; nl = out.indexOf('\n')) {
      const line = out.slice(0, nl);
      out = out.slice(nl + 1);
      waiting.shift()?.(line);
    }
  });
  const nextLine = () =>
    new Promise<string>((resolve, reject) => {
      waiting.push(resolve);
      child.once('exit', (code) => reject(new Error(`the API server exited (${code}): ${stderr}`)));
    });
  const ready = JSON.parse(await nextLine()) as { url: string; ca: string; cert: string; key: string };
  return {
    ...ready,
    port: Number(new URL(ready.url).port),
    child,
    stderr: () => stderr,
    rssAfterGc: async () => {
      const line = nextLine();
      child.kill('SIGUSR2');
      return (JSON.parse(await line) as { rss: number }).rss;
    },
    alive: () => child.exitCode === null && child.signalCode === null,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}
