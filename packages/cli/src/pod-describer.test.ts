import test from 'ava';
import type { Pod } from '@nodelet/api';
import { describePod, describeProbe, rfc1123z } from './pod-describer.js';
import { tabwrite } from './tabwriter.js';

test('tabwrite aligns cells per block of lines as Go text/tabwriter (padding 2)', (t) => {
  t.is(tabwrite('a\tb\tc\naaa\tbb\tc\n'), 'a    b   c\naaa  bb  c\n');
  // A line without a cell in a column ends that column's block; the next block aligns on its own.
  t.is(
    tabwrite('Name:\tx\nIPs:\n  IP:\ty\nLonger name:\tz\n'),
    'Name:  x\nIPs:\n  IP:         y\nLonger name:  z\n',
  );
  // Trailing text is not a cell; an empty cell is padded.
  t.is(tabwrite('k:\t\nkey:\tv\n'), 'k:    \nkey:  v\n');
});

test("describeProbe is kubectl's one-line probe", (t) => {
  const timing = {
    initialDelaySeconds: 0,
    timeoutSeconds: 1,
    periodSeconds: 10,
    successThreshold: 1,
    failureThreshold: 3,
  };
  const attrs = 'delay=0s timeout=1s period=10s #success=1 #failure=3';
  t.is(
    describeProbe({ httpGet: { path: '/healthz', port: 8080, scheme: 'HTTP' }, ...timing }),
    `http-get http://:8080/healthz ${attrs}`,
  );
  t.is(
    describeProbe({ httpGet: { path: '/', port: 'web', host: '10.0.0.1', scheme: 'HTTPS' }, ...timing }),
    `http-get https://10.0.0.1:web/ ${attrs}`,
  );
  t.is(describeProbe({ tcpSocket: { port: 5432 }, ...timing }), `tcp-socket :5432 ${attrs}`);
  t.is(
    describeProbe({ exec: { command: ['cat', '/tmp/healthy'] }, ...timing }),
    `exec [cat /tmp/healthy] ${attrs}`,
  );
  t.is(describeProbe({ grpc: { port: 9090, service: 'api' }, ...timing }), `grpc <pod>:9090 api ${attrs}`);
});

test('rfc1123z: Go time.RFC1123Z', (t) => {
  t.is(rfc1123z('2026-03-05T07:08:09Z', true), 'Thu, 05 Mar 2026 07:08:09 +0000');
  t.is(rfc1123z(undefined, true), '<unknown>');
});

test('describePod: a restarted container with probes, conditions, volumes and its probe events', (t) => {
  const pod: Pod = {
    metadata: {
      name: 'web-node1',
      namespace: 'default',
      uid: 'u1',
      labels: { app: 'web', tier: 'front' },
      annotations: { 'kubernetes.io/config.hash': 'abc', 'kubernetes.io/config.source': 'file' },
    },
    spec: {
      nodeName: 'node1',
      containers: [
        {
          name: 'web',
          image: 'nginx:1.27',
          ports: [{ containerPort: 8080, protocol: 'TCP', name: 'http' }],
          livenessProbe: {
            httpGet: { path: '/healthz', port: 8080, scheme: 'HTTP' },
            timeoutSeconds: 1,
            periodSeconds: 10,
            successThreshold: 1,
            failureThreshold: 3,
            initialDelaySeconds: 0,
          },
          readinessProbe: {
            exec: { command: ['cat', '/tmp/ready'] },
            timeoutSeconds: 1,
            periodSeconds: 5,
            successThreshold: 1,
            failureThreshold: 3,
            initialDelaySeconds: 2,
          },
          volumeMounts: [{ name: 'cache', mountPath: '/cache' }],
        },
      ],
      volumes: [{ name: 'cache', emptyDir: {} }],
      tolerations: [{ operator: 'Exists', effect: 'NoExecute' }],
    },
    status: {
      phase: 'Running',
      hostIP: '192.0.2.10',
      podIP: '10.244.0.5',
      podIPs: [{ ip: '10.244.0.5' }],
      startTime: '2026-01-01T00:00:00Z',
      qosClass: 'BestEffort',
      conditions: [
        { type: 'PodReadyToStartContainers', status: 'True' },
        { type: 'Initialized', status: 'True' },
        { type: 'Ready', status: 'False' },
        { type: 'ContainersReady', status: 'False' },
        { type: 'PodScheduled', status: 'True' },
      ],
      containerStatuses: [
        {
          name: 'web',
          containerID: 'containerd://abc123',
          image: 'nginx:1.27',
          imageID: 'sha256:def',
          ready: false,
          restartCount: 1,
          started: true,
          state: { running: { startedAt: '2026-01-01T00:00:35Z' } },
          lastState: {
            terminated: {
              exitCode: 143,
              reason: 'Error',
              startedAt: '2026-01-01T00:00:01Z',
              finishedAt: '2026-01-01T00:00:34Z',
            },
          },
        },
      ],
    },
  };
  const events = [
    {
      type: 'Warning',
      reason: 'Unhealthy',
      message: 'Liveness probe failed: HTTP probe failed with statuscode: 500',
      count: 3,
      firstTimestamp: '2026-01-01T00:00:14Z',
      lastTimestamp: '2026-01-01T00:00:34Z',
      source: { component: 'kubelet', host: 'node1' },
    },
    {
      type: 'Normal',
      reason: 'Killing',
      message: 'Container web failed liveness probe, will be restarted',
      count: 1,
      firstTimestamp: '2026-01-01T00:00:34Z',
      lastTimestamp: '2026-01-01T00:00:34Z',
      source: { component: 'kubelet', host: 'node1' },
    },
  ];

  const text = describePod(pod, events, { now: Date.parse('2026-01-01T00:01:00Z'), utc: true });
  t.is(
    text,
    [
      'Name:         web-node1',
      'Namespace:    default',
      'Node:         node1/192.0.2.10',
      'Start Time:   Thu, 01 Jan 2026 00:00:00 +0000',
      'Labels:       app=web',
      '              tier=front',
      'Annotations:  kubernetes.io/config.hash: abc',
      '              kubernetes.io/config.source: file',
      'Status:       Running',
      'IP:           10.244.0.5',
      'IPs:',
      '  IP:  10.244.0.5',
      'Containers:',
      '  web:',
      '    Container ID:   containerd://abc123',
      '    Image:          nginx:1.27',
      '    Image ID:       sha256:def',
      '    Port:           8080/TCP',
      '    Host Port:      0/TCP',
      '    State:          Running',
      '      Started:      Thu, 01 Jan 2026 00:00:35 +0000',
      '    Last State:     Terminated',
      '      Reason:       Error',
      '      Exit Code:    143',
      '      Started:      Thu, 01 Jan 2026 00:00:01 +0000',
      '      Finished:     Thu, 01 Jan 2026 00:00:34 +0000',
      '    Ready:          False',
      '    Restart Count:  1',
      '    Liveness:       http-get http://:8080/healthz delay=0s timeout=1s period=10s #success=1 #failure=3',
      '    Readiness:      exec [cat /tmp/ready] delay=2s timeout=1s period=5s #success=1 #failure=3',
      '    Environment:    <none>',
      '    Mounts:',
      '      /cache from cache (rw)',
      'Conditions:',
      '  Type                        Status',
      '  PodReadyToStartContainers   True ',
      '  Initialized                 True ',
      '  Ready                       False ',
      '  ContainersReady             False ',
      '  PodScheduled                True ',
      'Volumes:',
      '  cache:',
      "    Type:        EmptyDir (a temporary directory that shares a pod's lifetime)",
      '    Medium:      ',
      '    SizeLimit:   <unset>',
      'QoS Class:       BestEffort',
      'Node-Selectors:  <none>',
      'Tolerations:     :NoExecute op=Exists',
      'Events:',
      '  Type     Reason     Age                From     Message',
      '  ----     ------     ----               ----     -------',
      '  Warning  Unhealthy  26s (x3 over 46s)  kubelet  Liveness probe failed: HTTP probe failed with statuscode: 500',
      '  Normal   Killing    26s                kubelet  Container web failed liveness probe, will be restarted',
      '',
    ].join('\n'),
  );
});

test('describePod: no events, no volumes', (t) => {
  const text = describePod(
    {
      metadata: { name: 'p' },
      spec: { containers: [{ name: 'c', image: 'i' }] },
      status: { phase: 'Pending' },
    },
    [],
    { now: 0, utc: true },
  );
  t.regex(text, /^Name:\s+p\nNamespace:\s+default\nNode:\s+<none>\n/);
  t.regex(text, /\nVolumes:\s+<none>\n/);
  t.regex(text, /\nEvents:\s+<none>\n$/);
});
