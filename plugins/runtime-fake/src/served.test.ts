// The same CRI semantics through the gRPC server `nodelet cri serve` uses (serveCri), as crictl or a
// kubelet sees them: codes and messages cross the wire, the pull deadline is the client's.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { isErrorCode, VirtualClock } from '@nodelet/kernel';
import { ContainerConfig, createCriClient, type ImageSpec, serveCri } from '@nodelet/cri';
import { FakeRuntime } from './fake-runtime.js';
import { sandboxConfig } from './fixtures.js';

const spec = (image: string): ImageSpec => ({
  image,
  annotations: {},
  userSpecifiedImage: image,
  runtimeHandler: '',
  imageRef: '',
});

test('over gRPC: idempotent stops, runAsGroup refused, image user, exec answers, log file, pull deadline', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'runtime-fake-grpc-'));
  // Virtual time: the pull never completes unless the clock moves, so the 1 ms client deadline decides.
  const fake = new FakeRuntime({ clock: new VirtualClock() });
  const server = await serveCri(fake, fake, `unix://${join(dir, 'cri.sock')}`);
  const { runtime, image, close } = createCriClient(server.address, { timeoutMs: 10_000, pullTimeoutMs: 1 });
  t.teardown(async () => {
    close();
    await server.stop(0);
    fake.close();
    rmSync(dir, { recursive: true, force: true });
  });

  await t.notThrowsAsync(runtime.stopPodSandbox({ podSandboxId: 'a'.repeat(64) }));
  await t.notThrowsAsync(runtime.stopContainer({ containerId: 'b'.repeat(64), timeout: 0n }));
  await t.notThrowsAsync(runtime.removeContainer({ containerId: 'b'.repeat(64) }));

  const config = sandboxConfig('web', { logDirectory: join(dir, 'logs') });
  const { podSandboxId } = await runtime.runPodSandbox({ config, runtimeHandler: '' });
  const container = (name: string, security = {}) =>
    ContainerConfig.fromPartial({
      metadata: { name, attempt: 0 },
      image: spec('busybox'),
      command: ['sh', '-c', 'echo serving; sleep 3600'],
      logPath: `${name}/0.log`,
      linux: { securityContext: security },
    });
  const refused = await t.throwsAsync(
    runtime.createContainer({
      podSandboxId,
      config: container('bad', { runAsGroup: { value: 5n } }),
      sandboxConfig: config,
    }),
  );
  t.true(isErrorCode(refused, 'InvalidInput'), String(refused));
  t.regex(refused!.message, /user group "5" is specified without user/);

  const { containerId } = await runtime.createContainer({
    podSandboxId,
    config: container('app'),
    sandboxConfig: config,
  });
  await runtime.startContainer({ containerId });
  const exec = await runtime.execSync({ containerId, cmd: ['hostname'], timeout: 0n });
  t.is(Buffer.from(exec.stdout).toString(), 'web\n');
  t.regex(readFileSync(join(dir, 'logs', 'app', '0.log'), 'utf8'), /^\S+Z stdout F serving\n$/);

  const pause = await image.imageStatus({ image: spec('registry.k8s.io/pause:3.9'), verbose: false });
  t.deepEqual(pause.image?.uid, { value: 65535n });

  const pull = await t.throwsAsync(image.pullImage({ image: spec('nginx:1.25') }));
  t.true(isErrorCode(pull, 'DeadlineExceeded'), String(pull));
});
