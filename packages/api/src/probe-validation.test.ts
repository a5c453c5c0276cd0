import test from 'ava';
import { applyPodDefaults } from './defaults.js';
import { formatFieldError } from './field-error.js';
import type { Pod } from './types.js';
import { validatePod } from './validation.js';

/** Probe validation: the messages the API server gives, plus nodelet's named-port check. */

const pod = (container: Record<string, unknown>, init: Record<string, unknown>[] = []): Pod =>
  ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'web' },
    spec: {
      initContainers: init,
      containers: [
        { name: 'web', image: 'nginx:1.27', ports: [{ name: 'http', containerPort: 8080 }], ...container },
      ],
    },
  }) as Pod;

const messages = (p: Pod) => validatePod(p).map(formatFieldError);
const both = (p: Pod) => ({ before: messages(p), after: messages(applyPodDefaults(p)) });

test('well-formed probes of every handler pass, before and after defaulting', (t) => {
  const p = pod({
    livenessProbe: { httpGet: { path: '/healthz', port: 'http', scheme: 'HTTPS' }, periodSeconds: 5 },
    readinessProbe: { tcpSocket: { port: 8080 }, successThreshold: 3 },
    startupProbe: {
      exec: { command: ['cat', '/tmp/ready'] },
      failureThreshold: 30,
      terminationGracePeriodSeconds: 5,
    },
  });
  t.deepEqual(both(p), { before: [], after: [] });
  t.deepEqual(messages(pod({ livenessProbe: { grpc: { port: 9090, service: 'api' } } })), []);
});

test('a named port the container does not have is refused, naming the field and the ports it has', (t) => {
  t.deepEqual(messages(pod({ livenessProbe: { httpGet: { path: '/', port: 'metrics' } } })), [
    'spec.containers[0].livenessProbe.httpGet.port: Not found: "metrics": the container has no port of that name (its ports: "http")',
  ]);
  t.deepEqual(messages(pod({ readinessProbe: { tcpSocket: { port: 'db' } }, ports: [] })), [
    'spec.containers[0].readinessProbe.tcpSocket.port: Not found: "db": the container has no port of that name (it names no ports)',
  ]);
  t.deepEqual(messages(pod({ livenessProbe: { tcpSocket: { port: 70000 } } })), [
    'spec.containers[0].livenessProbe.tcpSocket.port: Invalid value: 70000: must be between 1 and 65535, inclusive',
  ]);
  const [bad] = messages(pod({ livenessProbe: { tcpSocket: { port: 'Not_A_Name' } } }));
  t.regex(
    bad!,
    /^spec\.containers\[0\]\.livenessProbe\.tcpSocket\.port: Invalid value: "Not_A_Name": must contain only/,
  );
  t.deepEqual(messages(pod({ livenessProbe: { grpc: { port: 0 } } })), [
    'spec.containers[0].livenessProbe.grpc.port: Invalid value: 0: must be between 1 and 65535, inclusive',
  ]);
});

test('an invalid scheme, header name or empty path', (t) => {
  t.deepEqual(
    messages(
      pod({
        readinessProbe: {
          httpGet: { path: '', port: 8080, scheme: 'FTP', httpHeaders: [{ name: 'Bad Header', value: 'x' }] },
        },
      }),
    ),
    [
      'spec.containers[0].readinessProbe.httpGet.path: Required value',
      'spec.containers[0].readinessProbe.httpGet.scheme: Unsupported value: "FTP": supported values: "HTTP", "HTTPS"',
      `spec.containers[0].readinessProbe.httpGet.httpHeaders: Invalid value: "Bad Header": a valid HTTP header must consist of alphanumeric characters or '-' (e.g. 'X-Header-Name', regex used for validation is '[-A-Za-z0-9]+')`,
    ],
  );
});

test('exactly one handler per probe', (t) => {
  t.deepEqual(
    messages(pod({ livenessProbe: { exec: { command: ['true'] }, httpGet: { path: '/', port: 8080 } } })),
    ['spec.containers[0].livenessProbe.httpGet: Forbidden: may not specify more than 1 handler type'],
  );
  t.deepEqual(messages(pod({ startupProbe: { periodSeconds: 1 } })), [
    'spec.containers[0].startupProbe: Required value: must specify a handler type',
  ]);
  t.deepEqual(messages(pod({ readinessProbe: { exec: { command: [] } } })), [
    'spec.containers[0].readinessProbe.exec.command: Required value',
  ]);
});

test('successThreshold must be 1 for liveness and startup; counts are non-negative', (t) => {
  t.deepEqual(
    messages(
      pod({
        livenessProbe: { exec: { command: ['true'] }, successThreshold: 2 },
        startupProbe: { exec: { command: ['true'] }, successThreshold: 3, periodSeconds: -1 },
        readinessProbe: { exec: { command: ['true'] }, successThreshold: 3, initialDelaySeconds: -5 },
      }),
    ),
    [
      'spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1',
      'spec.containers[0].readinessProbe.initialDelaySeconds: Invalid value: -5: must be greater than or equal to 0',
      'spec.containers[0].startupProbe.periodSeconds: Invalid value: -1: must be greater than or equal to 0',
      'spec.containers[0].startupProbe.successThreshold: Invalid value: 3: must be 1',
    ],
  );
  t.deepEqual(messages(pod({ livenessProbe: { exec: { command: ['true'] }, successThreshold: 0 } })), []);
});

test('probe-level terminationGracePeriodSeconds: above 0, and not on readiness probes', (t) => {
  t.deepEqual(
    messages(
      pod({
        livenessProbe: { exec: { command: ['true'] }, terminationGracePeriodSeconds: 0 },
        readinessProbe: { exec: { command: ['true'] }, terminationGracePeriodSeconds: 10 },
      }),
    ),
    [
      'spec.containers[0].livenessProbe.terminationGracePeriodSeconds: Invalid value: 0: must be greater than 0',
      'spec.containers[0].readinessProbe.terminationGracePeriodSeconds: Invalid value: 10: must not be set for readinessProbes',
    ],
  );
});

test('init containers may not have probes', (t) => {
  t.deepEqual(
    messages(pod({}, [{ name: 'setup', image: 'busybox', readinessProbe: { exec: { command: ['true'] } } }])),
    [
      'spec.initContainers[0].readinessProbe: Forbidden: may not be set for init containers without restartPolicy=Always',
    ],
  );
});
