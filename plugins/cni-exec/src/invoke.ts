import { spawn } from 'node:child_process';
import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { CniCommand } from '@nodelet/cni';

/** The CNI_* environment of one execution (the spec's parameters). */
export interface CniEnv {
  readonly command: CniCommand;
  readonly containerId?: string;
  readonly netns?: string;
  readonly ifName?: string;
  readonly args?: string;
  /** Directories joined into CNI_PATH. */
  readonly path: readonly string[];
}

export interface ExecRequest {
  readonly binary: string;
  readonly env: CniEnv;
  readonly stdin: string;
  readonly timeoutMs: number;
}

export type ExecOutcome =
  | {
      readonly kind: 'exited';
      readonly code: number | null;
      readonly signal: string | null;
      readonly stdout: string;
      readonly stderr: string;
    }
  | { readonly kind: 'timeout'; readonly stderr: string }
  | { readonly kind: 'spawn-error'; readonly error: NodeJS.ErrnoException }
  | { readonly kind: 'output-too-large' };

/** More than this on stdout is not a CNI result; the plugin is killed. */
const MAX_OUTPUT = 8 * 1024 * 1024;
/** stderr is for logs; what is past this is dropped. */
const MAX_STDERR = 64 * 1024;

/**
 * The first executable `binDirs[i]/name`, or undefined (libcni's FindInPath). `name` is a plugin `type`,
 * already checked to be a plain file name.
 */
export async function findPlugin(name: string, binDirs: readonly string[]): Promise<string | undefined> {
  for (const dir of binDirs) {
    const path = join(dir, name);
    const info = await stat(path).catch(() => undefined);
    if (!info?.isFile()) continue;
    if (
      await access(path, constants.X_OK).then(
        () => true,
        () => false,
      )
    )
      return path;
  }
  return undefined;
}

/** The process environment plus the CNI parameters, which override inherited values (as libcni does). */
export function cniEnvironment(env: CniEnv, base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  return {
    ...base,
    CNI_COMMAND: env.command,
    CNI_CONTAINERID: env.containerId ?? '',
    CNI_NETNS: env.netns ?? '',
    CNI_ARGS: env.args ?? '',
    CNI_IFNAME: env.ifName ?? '',
    CNI_PATH: env.path.join(':'),
  };
}

/**
 * Runs one plugin: configuration on stdin, CNI parameters in the environment, stdout and stderr
 * collected. The plugin runs in its own process group, so a timeout kills it together with what it
 * delegated to (an IPAM plugin). Never rejects: every way it can end is an `ExecOutcome`.
 */
export function execPlugin(req: ExecRequest): Promise<ExecOutcome> {
  return new Promise((resolve) => {
    let settled = false;
    const finish = (outcome: ExecOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(outcome);
    };
    const child = spawn(req.binary, [], {
      env: cniEnvironment(req.env),
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    let size = 0;
    let stderrSize = 0;
    const killGroup = () => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    };
    const timer = setTimeout(() => {
      killGroup();
      finish({ kind: 'timeout', stderr: Buffer.concat(stderr).toString('utf8') });
    }, req.timeoutMs);

    child.on('error', (error: NodeJS.ErrnoException) => finish({ kind: 'spawn-error', error }));
    child.stdout.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_OUTPUT) {
        killGroup();
        finish({ kind: 'output-too-large' });
        return;
      }
      stdout.push(chunk);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      if (stderrSize >= MAX_STDERR) return;
      stderrSize += chunk.length;
      stderr.push(chunk);
    });
    child.on('close', (code, signal) =>
      finish({
        kind: 'exited',
        code,
        signal,
        stdout: Buffer.concat(stdout).toString('utf8'),
        stderr: Buffer.concat(stderr).toString('utf8'),
      }),
    );
    // A plugin may exit without reading its configuration; that is its answer, not a write error.
    child.stdin.on('error', () => undefined);
    child.stdin.end(req.stdin);
  });
}
