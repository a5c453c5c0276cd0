import test from 'ava';
import type { ContainerStatus, Pod } from '@nodelet/api';
import { createLogger, EventBus, MemorySink, VirtualClock } from '@nodelet/kernel';
import { PodEventSource } from './pod-event-source.js';

const pod: Pod = {
  metadata: { name: 'web', namespace: 'default', uid: 'u1' },
  spec: { containers: [{ name: 'main', image: 'nginx:1.27' }] },
};

function setup() {
  const clock = new VirtualClock();
  const logger = createLogger({ sink: new MemorySink().sink });
  const bus = new EventBus(clock, logger);
  const events: string[] = [];
  bus.subscribe('[Kubelet] Pod Event', (e) =>
    events.push(`${e.eventType} ${e.reason} ${e.message}${e.container ? ` [${e.container}]` : ''}`),
  );
  const source = new PodEventSource(bus, (uid) => (uid === 'u1' ? pod : undefined));
  source.start();
  const status = (c: Partial<ContainerStatus>) =>
    bus.emit('[Status] Pod Status Changed', {
      podUid: 'u1',
      podName: 'web',
      namespace: 'default',
      status: {
        phase: 'Pending',
        containerStatuses: [
          { name: 'main', image: 'nginx:1.27', imageID: '', ready: false, restartCount: 0, ...c },
        ],
      },
    });
  return { bus, events, source, status, logger };
}

const waiting = (reason: string, message = '') => ({ state: { waiting: { reason, message } } });

test('waiting reasons become upstream events, once per change', (t) => {
  const { events, status } = setup();
  status(waiting('ErrImagePull', 'Failed to pull image "nginx:1.27": not found'));
  status(waiting('ErrImagePull', 'Failed to pull image "nginx:1.27": not found')); // unchanged: nothing
  status(waiting('ImagePullBackOff', 'Back-off pulling image "nginx:1.27"'));
  status(waiting('CreateContainerConfigError', 'secret "s" not found'));
  status(waiting('RunContainerError', 'exec: "nope": not found'));
  status(waiting('ContainerCreating', 'Failed to create pod sandbox: network not ready'));
  status(waiting('ContainerCreating', 'volume "data": hostPath type check failed: /data is not a directory')); // the volume manager's
  status(waiting('CrashLoopBackOff', 'back-off 10s restarting failed container=main pod=web_default(u1)'));
  t.deepEqual(events, [
    'Warning Failed Failed to pull image "nginx:1.27": not found [main]',
    'Warning Failed Error: ErrImagePull [main]',
    'Normal BackOff Back-off pulling image "nginx:1.27" [main]',
    'Warning Failed Error: ImagePullBackOff [main]',
    'Warning Failed Error: secret "s" not found [main]',
    'Warning Failed Error: exec: "nope": not found [main]',
    'Warning FailedCreatePodSandBox Failed to create pod sandbox: network not ready',
    'Warning BackOff Back-off restarting failed container main in pod web_default(u1) [main]',
  ]);
});

test('a new container: Pulling, Pulled (from the image puller), Created, Started; then Killing on removal', (t) => {
  const { bus, events, status } = setup();
  // What the image puller publishes for a pull.
  const pull = { podUid: 'u1', podName: 'web', namespace: 'default', container: 'main' } as const;
  bus.emit('[Kubelet] Pod Event', {
    ...pull,
    eventType: 'Normal',
    reason: 'Pulling',
    message: 'Pulling image "nginx:1.27"',
  });
  bus.emit('[Kubelet] Pod Event', {
    ...pull,
    eventType: 'Normal',
    reason: 'Pulled',
    message: 'Successfully pulled image "nginx:1.27"',
  });
  status({ containerID: 'fake://c1', state: { running: { startedAt: '2026-01-01T00:00:00Z' } } });
  bus.emit('[Source] Pod Removed', { source: 'api', pod });
  t.deepEqual(events, [
    'Normal Pulling Pulling image "nginx:1.27" [main]',
    'Normal Pulled Successfully pulled image "nginx:1.27" [main]',
    'Normal Created Created container: main [main]',
    'Normal Started Started container main [main]',
    'Normal Killing Stopping container main [main]',
  ]);
});

test('probe failures: Unhealthy, and Killing when liveness gives up', (t) => {
  const { bus, events } = setup();
  const result = {
    podUid: 'u1',
    container: 'main',
    containerId: 'c1',
    message: 'HTTP probe failed with statuscode: 500',
  };
  bus.emit('[Prober] Probe Result', { ...result, probe: 'readiness', result: 'failure', changed: true });
  bus.emit('[Prober] Probe Result', { ...result, probe: 'liveness', result: 'failure', changed: false });
  bus.emit('[Prober] Probe Result', { ...result, probe: 'liveness', result: 'failure', changed: true });
  bus.emit('[Prober] Probe Result', { ...result, probe: 'liveness', result: 'success', changed: true });
  t.deepEqual(events, [
    'Warning Unhealthy Readiness probe failed: HTTP probe failed with statuscode: 500 [main]',
    'Warning Unhealthy Liveness probe failed: HTTP probe failed with statuscode: 500 [main]',
    'Warning Unhealthy Liveness probe failed: HTTP probe failed with statuscode: 500 [main]',
    'Normal Killing Container main failed liveness probe, will be restarted [main]',
  ]);
});
