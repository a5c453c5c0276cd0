// Test support (not part of the package's API): a private image registry on 127.0.0.1 — Debian's
// `docker-registry` (the CNCF distribution registry) with htpasswd authentication, its config and storage
// in a directory of the test's own — and the locally built busybox pushed into it with `skopeo`.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { TestFn } from 'ava';

const run = promisify(execFile);

/** What the registry test needs besides containerd, and the Debian package of each. */
const TOOLS: [command: string, pkg: string][] = [
  ['docker-registry', 'docker-registry'],
  ['skopeo', 'skopeo'],
  ['htpasswd', 'apache2-utils'],
  ['/bin/busybox', 'busybox-static'],
];
const APT = 'apt-get install docker-registry skopeo apache2-utils busybox-static';

const exists = (command: string) =>
  run('sh', ['-c', 'command -v "$1"', 'sh', command]).then(
    () => true,
    () => false,
  );

/**
 * The rule of the real-runtime tests for the registry's tools: all there → true; one missing → under
 * CI=true one failing test, elsewhere one skipped test, naming it and the apt command → false.
 */
export async function requireRegistryTools<C>(test: TestFn<C>): Promise<boolean> {
  for (const [command, pkg] of TOOLS) {
    if (await exists(command)) continue;
    const why = `${command} is not installed (package ${pkg}: ${APT})`;
    if (process.env.CI === 'true')
      test(`the private-registry test is required in CI: ${why}`, (t) => t.fail(why));
    else test.skip(`${why}; skipping the private-registry pull test`, () => undefined);
    return false;
  }
  return true;
}

export interface TestRegistry {
  /** `127.0.0.1:<port>`: the registry part of image names. */
  readonly host: string;
  /** Copies an OCI image-layout tar into the registry as `<host>/<repository>`, with the login. */
  push(ociArchive: string, repository: string): Promise<void>;
  /** Stops the registry (by its PID) and waits for it to exit. */
  stop(): Promise<void>;
}

/** A free TCP port on 127.0.0.1 (bound to port 0, then released for the registry to take). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((ok, fail) => server.once('error', fail).listen(0, '127.0.0.1', ok));
  const { port } = server.address() as { port: number };
  await new Promise((ok) => server.close(ok));
  return port;
}

/** Starts a registry in `dir` that accepts one login; resolves once it answers on its port. */
export async function startRegistry(
  dir: string,
  login: { username: string; password: string },
): Promise<TestRegistry> {
  mkdirSync(join(dir, 'storage'), { recursive: true });
  const { stdout: entry } = await run('htpasswd', ['-Bbn', login.username, login.password]);
  writeFileSync(join(dir, 'htpasswd'), entry.trim() + '\n', { mode: 0o600 });
  const port = await freePort();
  const host = `127.0.0.1:${port}`;
  const config = join(dir, 'config.yml');
  writeFileSync(
    config,
    [
      'version: 0.1',
      'log: { level: info, accesslog: { disabled: true } }',
      `storage: { filesystem: { rootdirectory: ${join(dir, 'storage')} }, delete: { enabled: true } }`,
      `http: { addr: "${host}", secret: nodelet-test-${port} }`,
      `auth: { htpasswd: { realm: nodelet-test, path: ${join(dir, 'htpasswd')} } }`,
      '',
    ].join('\n'),
  );
  const log = join(dir, 'registry.log');
  const out = openSync(log, 'a');
  const child: ChildProcess = spawn('docker-registry', ['serve', config], { stdio: ['ignore', out, out] });
  const exited = new Promise<void>((ok) => child.once('exit', () => ok()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  };
  try {
    await waitUntilAnswering(host, child, log);
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    host,
    stop,
    async push(ociArchive, repository) {
      const authfile = join(dir, 'skopeo-auth.json');
      const auth = Buffer.from(`${login.username}:${login.password}`).toString('base64');
      writeFileSync(authfile, JSON.stringify({ auths: { [host]: { auth } } }), { mode: 0o600 });
      await run(
        'skopeo',
        [
          '--insecure-policy',
          'copy',
          '--quiet',
          '--dest-tls-verify=false',
          '--dest-authfile',
          authfile,
          `oci-archive:${ociArchive}`,
          `docker://${host}/${repository}`,
        ],
        { timeout: 120_000 },
      );
    },
  };
}

/** Polls `GET /v2/` (401 without a login once it serves) for up to 30 s. */
async function waitUntilAnswering(host: string, child: ChildProcess, log: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if (child.exitCode !== null) {
      throw new Error(
        `docker-registry exited (${child.exitCode}): ${readFileSync(log, 'utf8').slice(-2000)}`,
      );
    }
    const status = await fetch(`http://${host}/v2/`).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 401) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(
    `docker-registry did not answer on ${host} within 30 s: ${readFileSync(log, 'utf8').slice(-2000)}`,
  );
}

/** Builds the busybox OCI image-layout tar (scripts/images/build-busybox-image.sh) as `name`. */
export async function buildBusyboxImage(name: string, output: string): Promise<void> {
  const root = resolve(fileURLToPath(import.meta.url), '../../../..');
  await run('bash', [join(root, 'scripts/images/build-busybox-image.sh'), name, output], {
    timeout: 120_000,
  });
}
