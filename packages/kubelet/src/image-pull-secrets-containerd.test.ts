import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import type { Pod } from '@nodelet/api';
import { createCriClient } from '@nodelet/cri';
import { createLogger, EventBus, type EventCatalogue, MemorySink, RealClock } from '@nodelet/kernel';
import { requireContainerd } from '@nodelet/runtime-cri/testing';
import { Kubelet } from './kubelet.js';
import { removeImageNames, removeOwnPods, until } from './test-containerd.js';
import { TestSource } from './test-harness.js';
import { dockerConfigJsonSecret, podObjectsWith, registryLogin } from './test-pull-secrets.js';
import { buildBusyboxImage, requireRegistryTools, startRegistry } from './test-registry.js';

/**
 * Image pull secrets against a real registry: Debian's docker-registry on 127.0.0.1 with htpasswd
 * authentication, the locally built busybox pushed into it with skopeo, and a kubelet on the real
 * containerd pulling from it over plain HTTP (a hosts.toml under containerd's registry config_path).
 * With the right pull secret the pod runs; with none, or a wrong password, it waits in ErrImagePull
 * showing the registry's 401, then ImagePullBackOff.
 *
 * Skipped (one line) without containerd or the registry's tools, failed without them in CI. The
 * containerd is shared: only this test's pods, image and hosts.toml are removed.
 */

// Before any test is declared: ava takes declarations only until the file's first await is over.
const containerd = await requireContainerd(test);
const tools = containerd ? await requireRegistryTools(test) : false;

const USER = 'nodelet';
const PASSWORD = `pw-${process.pid}-${Date.now()}`;

if (containerd && tools) {
  test('pull secrets on containerd: a private registry on 127.0.0.1 serves the pod with the secret, refuses it without (401)', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'nodelet-registry-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const registry = await startRegistry(join(dir, 'registry'), { username: USER, password: PASSWORD });
    t.teardown(() => registry.stop());
    const archive = join(dir, 'busybox.tar');
    await buildBusyboxImage('nodelet.test/private-busybox:1', archive);
    await registry.push(archive, 'busybox:1');
    const image = `${registry.host}/busybox:1`;

    const client = createCriClient(containerd.endpoint, { timeoutMs: 60_000 });
    t.teardown(() => client.close());
    // Plain HTTP to this registry, as an operator configures a private one (containerd reads the
    // hosts.toml at each pull: no restart).
    const status = await client.runtime.status({ verbose: true });
    const configPath = (JSON.parse(status.info.config ?? '{}').registry?.configPath ?? '').split(':')[0];
    if (configPath) {
      const hostDir = join(configPath, registry.host);
      mkdirSync(hostDir, { recursive: true });
      writeFileSync(
        join(hostDir, 'hosts.toml'),
        `server = "http://${registry.host}"\n\n[host."http://${registry.host}"]\n  capabilities = ["pull", "resolve"]\n`,
      );
      t.teardown(() => rmSync(hostDir, { recursive: true, force: true }));
    } else {
      t.log(
        'containerd has no registry config_path (scripts/containerd/setup.sh sets one); 127.0.0.1 is plain HTTP by default',
      );
    }

    const objects = podObjectsWith(
      dockerConfigJsonSecret('regcred', { [registry.host]: registryLogin(USER, PASSWORD) }),
      dockerConfigJsonSecret('wrongcred', { [registry.host]: registryLogin(USER, 'not-the-password') }),
    );
    const clock = new RealClock();
    const logs = new MemorySink();
    const logger = createLogger({ sink: logs.sink, level: 'debug' });
    const bus = new EventBus(clock, logger);
    const events: EventCatalogue['[Kubelet] Pod Event'][] = [];
    bus.subscribe('[Kubelet] Pod Event', (e) => void events.push(e));
    const source = new TestSource();
    const kubelet = new Kubelet(
      { runtime: client.runtime, images: client.image, bus, clock, logger, objects },
      {
        nodeName: 'pull-secrets-test',
        hostIP: '127.0.0.1',
        rootDir: join(dir, 'root'),
        podLogsDir: join(dir, 'logs'),
        sources: [source],
        housekeepingPeriodMs: 3_600_000,
      },
    );
    const run = `${process.pid}-${Date.now()}`;
    const pod = (name: string, pullSecrets: string[]): Pod => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: 'default', uid: `${name}-${run}` },
      spec: {
        hostNetwork: true,
        restartPolicy: 'Always',
        terminationGracePeriodSeconds: 1,
        imagePullSecrets: pullSecrets.map((n) => ({ name: n })),
        // Always: every pull asks the registry, even once the image is here.
        containers: [{ name: 'app', image, imagePullPolicy: 'Always', command: ['sleep', '3600'] }],
      },
    });
    const pods = [pod('no-secret', []), pod('wrong-secret', ['wrongcred']), pod('with-secret', ['regcred'])];
    await kubelet.start();
    t.teardown(async () => {
      await removeOwnPods(
        kubelet,
        source,
        client,
        pods.map((p) => p.metadata!.uid!),
      );
      await removeImageNames(containerd.socket, `${registry.host}/`);
    });

    const waiting = (name: string) =>
      kubelet.getPod('default', name)?.status?.containerStatuses?.[0]?.state?.waiting;
    // The refused ones first, while the image is not on the node.
    source.set(pods.slice(0, 2));
    // Each is seen in ErrImagePull (a second later it turns to ImagePullBackOff): polled together.
    const refused = new Map<string, string>();
    await until(
      'both refused pods in ErrImagePull',
      () => {
        for (const name of ['no-secret', 'wrong-secret']) {
          const w = waiting(name);
          if (w?.reason === 'ErrImagePull') refused.set(name, w.message ?? '');
        }
        return refused.size === 2 ? true : undefined;
      },
      60_000,
    );
    for (const [name, message] of refused) {
      t.log(`${name}: ${message}`);
      t.regex(message, /^Failed to pull image "127\.0\.0\.1:\d+\/busybox:1": .*401 Unauthorized/, name);
    }
    await until(
      'ImagePullBackOff',
      () => (waiting('no-secret')?.reason === 'ImagePullBackOff' ? true : undefined),
      30_000,
    );

    source.set(pods);
    const running = await until(
      'the pod with the secret to run',
      () => kubelet.getPod('default', 'with-secret')?.status?.containerStatuses?.[0]?.state?.running,
      120_000,
    );
    t.truthy(running.startedAt);
    t.true(events.some((e) => e.podName === 'with-secret' && e.reason === 'Pulled'));
    t.regex(
      waiting('wrong-secret')?.reason ?? 'not waiting',
      /^(ErrImagePull|ImagePullBackOff)$/,
      'a wrong password still does not pull',
    );
    t.false(logs.lines().join('\n').includes(PASSWORD), 'the password is in no log line');
    t.false(JSON.stringify(events).includes(PASSWORD), 'nor in an event');
  });
}
