import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createCriClient } from '@nodelet/cri';
import { errorMessage } from '@nodelet/kernel';
import { containerdSocket } from '@nodelet/runtime-cri/testing';
import { pollUntil } from '../test-helpers.js';
import { mountsUnder, removeSandboxes } from './helpers.js';

/** An image of the shared containerd, copied under its own name or as `as`. */
export type ImageCopy = string | { ref: string; as: string };

export interface PrivateContainerdOptions {
  /** Where its directory is made (default: the system's temporary directory). */
  parent?: string;
  /** Only these images, copied from the shared containerd (default: all, built by import.sh). */
  copyImages?: readonly ImageCopy[];
}

/**
 * A containerd of the test's own, to stop and restart while nodelet runs; the shared one
 * (/run/containerd/containerd.sock) serves other test files at the same time and is never touched.
 *
 * Its config is scripts/containerd/config.sh's — the settings setup.sh gives the shared instance — for a
 * root, state directory and socket under a temporary directory; the pause and busybox images are
 * imported into it with scripts/images/import.sh. It runs as a child of the test process and is
 * stopped and started again by that child's PID.
 *
 * What the two instances share, and why that is safe: the CNI conflist, bridge and host-local store
 * (host-local holds an flock on the store's `lock` file for every ADD and DEL, as it does between
 * concurrent sandboxes of one containerd); runc's state under /run/containerd/runc/k8s.io and the
 * shims' sockets under /run/containerd/s (named by container id, random, and by a hash of the
 * containerd address). What they do not: content, snapshots, metadata, task bundles, the gRPC and
 * ttrpc sockets, and the CRI streaming server (port 0: a free port each).
 */
export class PrivateContainerd {
  /** `unix://<socket>`. */
  readonly endpoint: string;
  readonly socket: string;
  readonly config: string;
  readonly logFile: string;
  private child?: ChildProcess;
  /** Whether it was ever started: its state may hold pods. */
  private started = false;
  private exited?: Promise<void>;
  private readonly orphan = () => this.child?.kill('SIGTERM');

  private constructor(readonly dir: string) {
    // Short paths: a unix socket path is limited to 107 bytes.
    this.socket = join(dir, 'run', 'containerd.sock');
    this.endpoint = `unix://${this.socket}`;
    this.config = join(dir, 'data', 'config.toml');
    this.logFile = join(dir, 'data', 'containerd.log');
  }

  /**
   * Writes the config, starts containerd, waits until its CRI plugin is ready and imports the images:
   * all of scripts/images/import.sh's (built afresh, some seconds), or only `copyImages`, copied from the
   * shared containerd. On failure nothing is left running.
   */
  static async create(options: PrivateContainerdOptions = {}): Promise<PrivateContainerd> {
    const c = new PrivateContainerd(mkdtempSync(join(options.parent ?? tmpdir(), 'nodelet-ctrd-')));
    try {
      mkdirSync(join(c.dir, 'data'));
      writeFileSync(c.config, await script('containerd/config.sh', c.env()));
      await c.start();
      if (options.copyImages) await c.copyImages(options.copyImages);
      else await script('images/import.sh', c.env());
      return c;
    } catch (err) {
      await c.dispose().catch(() => undefined);
      throw err;
    }
  }

  /**
   * Copies images from the shared containerd (`ctr images export`, then `import` here), each under its
   * own name or another one.
   */
  private async copyImages(images: readonly ImageCopy[]): Promise<void> {
    const shared = ['--address', containerdSocket(), '-n', 'k8s.io'];
    const own = ['--address', this.socket, '-n', 'k8s.io'];
    const tar = join(this.dir, 'data', 'image.tar');
    for (const image of images) {
      const { ref, as } = typeof image === 'string' ? { ref: image, as: image } : image;
      await run('ctr', [...shared, 'images', 'export', tar, ref]);
      await run('ctr', [...own, 'images', 'import', tar]);
      rmSync(tar);
      if (as !== ref) {
        await run('ctr', [...own, 'images', 'tag', ref, as]);
        await run('ctr', [...own, 'images', 'rm', ref]);
      }
    }
  }

  /** The PID of the running containerd, or undefined when it is stopped. */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** The end of containerd's log, for failure messages. */
  logTail(lines = 30): string {
    try {
      return readFileSync(this.logFile, 'utf8').split('\n').slice(-lines).join('\n');
    } catch {
      return '';
    }
  }

  /** Starts containerd (again, on the same config and state) and waits until CRI says it is ready. */
  async start(): Promise<void> {
    if (this.child) throw new Error(`containerd (pid ${this.child.pid}) is already running`);
    const log = openSync(this.logFile, 'a');
    let child: ChildProcess;
    try {
      child = spawn('containerd', ['--config', this.config], { stdio: ['ignore', log, log] });
    } finally {
      closeSync(log);
    }
    this.child = child;
    this.started = true;
    let gone = false;
    this.exited = new Promise<void>((resolve) => {
      child.once('exit', () => {
        gone = true;
        resolve();
      });
      // A missing binary fails the spawn: no exit event follows.
      child.once('error', () => {
        gone = true;
        resolve();
      });
    });
    // If the test process goes first (ava's timeout), containerd must not outlive it.
    process.once('exit', this.orphan);
    await pollUntil(
      `containerd at ${this.socket} to report RuntimeReady and NetworkReady`,
      async () => {
        if (gone) {
          this.child = undefined;
          throw new Error(`containerd --config ${this.config} exited during startup:\n${this.logTail()}`);
        }
        return (await this.ready()) ? true : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 100, describe: () => this.logTail() },
    );
  }

  /** SIGTERM to the containerd started here, SIGKILL after `graceMs`; resolves once it has exited. */
  async stop(graceMs = 20_000): Promise<void> {
    const child = this.child;
    if (!child) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    try {
      await this.exited;
    } finally {
      clearTimeout(timer);
      this.child = undefined;
      process.off('exit', this.orphan);
    }
  }

  /**
   * Removes every pod sandbox (and with it its containers) through CRI, so CNI gives back the IPs and
   * veths, then stops containerd, unmounts what is left under the directory and deletes it. Pods outlive
   * a stopped containerd (their shims keep running), so one stopped by the test is started again first.
   * A failure to remove the pods is reported after the rest is cleaned up.
   */
  async dispose(): Promise<void> {
    let failure: unknown;
    try {
      if (!this.child && this.started) await this.start();
      if (this.child) await this.removeAllPods();
    } catch (err) {
      failure = err;
    }
    await this.stop();
    for (const { point } of mountsUnder(this.dir + '/').sort((a, b) => b.point.length - a.point.length)) {
      await run('umount', [point]).catch(() => run('umount', ['-l', point]));
    }
    rmSync(this.dir, { recursive: true, force: true });
    if (failure) throw failure;
  }

  private async removeAllPods(): Promise<void> {
    await removeSandboxes(this.endpoint);
    const client = createCriClient(this.endpoint, { timeoutMs: 60_000 });
    try {
      const { containers } = await client.runtime.listContainers({});
      if (containers.length > 0) {
        throw new Error(
          `containers left after removing every sandbox: ${containers.map((c) => c.id).join(' ')}`,
        );
      }
    } finally {
      client.close();
    }
  }

  /** CRI Status answers with RuntimeReady and NetworkReady true. */
  private async ready(): Promise<boolean> {
    const client = createCriClient(this.endpoint, { timeoutMs: 2000 });
    try {
      const { status } = await client.runtime.status({ verbose: false });
      const conditions = status?.conditions ?? [];
      return ['RuntimeReady', 'NetworkReady'].every((type) =>
        conditions.some((c) => c.type === type && c.status),
      );
    } catch {
      return false;
    } finally {
      client.close();
    }
  }

  /** The environment scripts/containerd/lib.sh reads: this instance's directory and socket. */
  private env(): NodeJS.ProcessEnv {
    return {
      ...process.env,
      NODELET_CONTAINERD_DIR: join(this.dir, 'data'),
      NODELET_CONTAINERD_SOCK: this.socket,
    };
  }
}

const SCRIPTS = fileURLToPath(new URL('../../../../scripts/', import.meta.url));

/** Runs a script of scripts/ with bash; resolves its stdout, rejects with its stderr. */
function script(path: string, env: NodeJS.ProcessEnv): Promise<string> {
  return run('bash', [join(SCRIPTS, path)], env);
}

function run(command: string, args: string[], env?: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(
      command,
      args,
      { env, timeout: 120_000, encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) =>
        err
          ? reject(new Error(`${command} ${args.join(' ')} failed: ${stderr.trim() || errorMessage(err)}`))
          : resolve(stdout),
    ),
  );
}
