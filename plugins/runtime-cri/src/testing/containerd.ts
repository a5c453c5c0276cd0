/**
 * Whether a real containerd is there for tests, and the rule every real-runtime test follows:
 *
 *  - available: the tests run;
 *  - not available and `CI=true`: the tests FAIL (CI must have containerd; `.ci/run` sets it up);
 *  - not available elsewhere: ONE skipped test whose title says why and how to get containerd.
 *
 * Usage in an ava test file, with top-level await *before any other test is declared* (ava stops
 * accepting declarations once the file's synchronous part and its first await are over):
 *
 *     const containerd = await requireContainerd(test);
 *     if (containerd) { test('…', async (t) => { … createCriClient(containerd.endpoint) … }); }
 */
import { stat } from 'node:fs/promises';
import type { TestFn } from 'ava';
import { errorMessage } from '@nodelet/kernel';
import { createCriClient, type VersionResponse } from '@nodelet/cri';

/** Where containerd listens unless `NODELET_CONTAINERD_SOCKET` says otherwise. */
export const DEFAULT_CONTAINERD_SOCKET = '/run/containerd/containerd.sock';

export type ContainerdProbe =
  | { available: true; socket: string; endpoint: string; version: VersionResponse }
  | { available: false; socket: string; endpoint: string; reason: string };

/** The socket the tests use: `NODELET_CONTAINERD_SOCKET`, else containerd's default. */
export function containerdSocket(): string {
  return process.env.NODELET_CONTAINERD_SOCKET || DEFAULT_CONTAINERD_SOCKET;
}

/** Checks that the socket exists and answers a CRI v1 Version call within `timeoutMs` (5 s). */
export async function probeContainerd(
  options: { socket?: string; timeoutMs?: number } = {},
): Promise<ContainerdProbe> {
  const socket = options.socket ?? containerdSocket();
  const endpoint = `unix://${socket}`;
  const info = await stat(socket).catch(() => undefined);
  if (!info) return { available: false, socket, endpoint, reason: 'no such socket' };
  if (!info.isSocket()) return { available: false, socket, endpoint, reason: 'not a socket' };
  const client = createCriClient(endpoint, { timeoutMs: options.timeoutMs ?? 5000 });
  try {
    const version = await client.runtime.version({ version: '0.1.0' });
    if (version.runtimeApiVersion !== 'v1') {
      return {
        available: false,
        socket,
        endpoint,
        reason: `it speaks CRI ${version.runtimeApiVersion}, not v1`,
      };
    }
    return { available: true, socket, endpoint, version };
  } catch (err) {
    return { available: false, socket, endpoint, reason: `Version failed: ${errorMessage(err)}` };
  } finally {
    client.close();
  }
}

/**
 * Applies the availability rule (see the module comment) for the calling test file: resolves to the
 * probe when containerd answers; otherwise declares the one failing (CI) or skipped test and
 * resolves to undefined, so the file declares nothing else.
 */
export async function requireContainerd<C>(
  test: TestFn<C>,
  options: { socket?: string; timeoutMs?: number } = {},
): Promise<Extract<ContainerdProbe, { available: true }> | undefined> {
  const probe = await probeContainerd(options);
  if (probe.available) return probe;
  if (process.env.CI === 'true') {
    test(`containerd is required in CI (CI=true): not available at ${probe.socket}`, (t) => {
      t.fail(
        `containerd is required in CI but is not available at ${probe.socket} (${probe.reason}); .ci/run starts it with scripts/containerd/setup.sh`,
      );
    });
  } else {
    test.skip(`containerd not available at ${probe.socket} (${probe.reason}); skipping real-runtime tests (run scripts/containerd/setup.sh)`, () =>
      undefined);
  }
  return undefined;
}
