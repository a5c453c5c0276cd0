import test from 'ava';
import { applyPodDefaults } from './defaults.js';
import { formatFieldError } from './field-error.js';
import { findSchemaErrors, findUnknownFields } from './schema.js';
import type { Pod } from './types.js';
import { validatePod } from './validation.js';

const pod = (spec: Record<string, unknown>, metadata: Record<string, unknown> = { name: 'web' }): Pod =>
  ({ apiVersion: 'v1', kind: 'Pod', metadata, spec }) as Pod;

const web = () =>
  pod({
    containers: [{ name: 'web', image: 'nginx:1.27', ports: [{ containerPort: 80, name: 'http' }] }],
  });

const messages = (p: Pod) => validatePod(p).map(formatFieldError);

test('a well-formed pod has no errors, before and after defaulting', (t) => {
  t.deepEqual(messages(web()), []);
  t.deepEqual(messages(applyPodDefaults(web())), []);
});

test('a pod without containers: spec.containers is required', (t) => {
  t.deepEqual(messages(pod({ containers: [] })), ['spec.containers: Required value']);
  t.deepEqual(messages(pod({})), ['spec.containers: Required value']);
  t.deepEqual(messages({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'x' } } as Pod), [
    'spec: Required value',
  ]);
});

test('metadata.name is required and must be a DNS-1123 subdomain', (t) => {
  const noName = messages(pod(web().spec as never, {}));
  t.deepEqual(noName, ['metadata.name: Required value: name or generateName is required']);
  const [bad] = messages(pod(web().spec as never, { name: 'Web_1' }));
  t.regex(bad!, /^metadata\.name: Invalid value: "Web_1": a lowercase RFC 1123 subdomain must consist of/);
  t.deepEqual(messages(pod(web().spec as never, { name: 'web.example-1' })), []);
  t.deepEqual(messages(pod(web().spec as never, { name: 'web', namespace: 'Kube_System' })).length, 1);
});

test('container names are DNS-1123 labels, unique across init and app containers', (t) => {
  const errors = messages(
    pod({
      initContainers: [{ name: 'setup', image: 'busybox' }],
      containers: [
        { name: 'setup', image: 'nginx' },
        { name: 'Side_Car', image: 'nginx' },
        { image: 'nginx' },
      ],
    }),
  );
  t.deepEqual(errors.slice(0, 1), ['spec.containers[0].name: Duplicate value: "setup"']);
  t.regex(errors[1]!, /^spec\.containers\[1\]\.name: Invalid value: "Side_Car": a lowercase RFC 1123 label/);
  t.is(errors[2], 'spec.containers[2].name: Required value');
  t.is(errors.length, 3);
});

test('image is required; policies take only their supported values', (t) => {
  const errors = messages(
    pod({
      restartPolicy: 'Sometimes',
      dnsPolicy: 'Google',
      containers: [{ name: 'a', imagePullPolicy: 'Maybe' }],
    }),
  );
  t.deepEqual(errors, [
    'spec.containers[0].image: Required value',
    'spec.containers[0].imagePullPolicy: Unsupported value: "Maybe": supported values: "Always", "IfNotPresent", "Never"',
    'spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"',
    'spec.dnsPolicy: Unsupported value: "Google": supported values: "ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"',
  ]);
});

test('ports: numbers in 1–65535, names are IANA service names of at most 15 characters, unique', (t) => {
  const errors = messages(
    pod({
      containers: [
        {
          name: 'a',
          image: 'x',
          ports: [
            { containerPort: 0 },
            { containerPort: 70000, protocol: 'ICMP' },
            { containerPort: 80, hostPort: -1, name: 'a-very-long-port-name' },
            { containerPort: 81, name: 'http' },
            { containerPort: 82, name: 'http' },
            { containerPort: 83, name: '8080' },
          ],
        },
      ],
    }),
  );
  t.deepEqual(errors, [
    'spec.containers[0].ports[0].containerPort: Required value',
    'spec.containers[0].ports[1].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive',
    'spec.containers[0].ports[1].protocol: Unsupported value: "ICMP": supported values: "TCP", "UDP", "SCTP"',
    'spec.containers[0].ports[2].hostPort: Invalid value: -1: must be between 1 and 65535, inclusive',
    'spec.containers[0].ports[2].name: Invalid value: "a-very-long-port-name": must be no more than 15 characters',
    'spec.containers[0].ports[4].name: Duplicate value: "http"',
    'spec.containers[0].ports[5].name: Invalid value: "8080": must contain at least one letter (a-z)',
  ]);
});

test('volumes: unique names, exactly one source; mounts refer to volumes and have a mountPath', (t) => {
  const errors = messages(
    pod({
      volumes: [
        { name: 'data', emptyDir: {} },
        { name: 'data', hostPath: { path: '/srv' } },
        { name: 'both', emptyDir: {}, hostPath: { path: '/x' } },
        { name: 'none' },
      ],
      containers: [
        {
          name: 'a',
          image: 'x',
          volumeMounts: [
            { name: 'data', mountPath: '/data' },
            { name: 'cache', mountPath: '/cache' },
            { name: 'both' },
          ],
        },
      ],
    }),
  );
  t.deepEqual(errors, [
    'spec.volumes[1].name: Duplicate value: "data"',
    'spec.volumes[2].hostPath: Forbidden: may not specify more than 1 volume type',
    'spec.volumes[3]: Required value: must specify a volume type',
    'spec.containers[0].volumeMounts[1].name: Not found: "cache"',
    'spec.containers[0].volumeMounts[2].mountPath: Required value',
  ]);
});

test('env names, init containers and terminationGracePeriodSeconds', (t) => {
  const errors = messages(
    pod({
      terminationGracePeriodSeconds: -5,
      initContainers: [{ name: 'init', env: [{ name: 'A=B' }, { value: 'x' }, { name: 'my.env-NAME_1' }] }],
      containers: [{ name: 'a', image: 'x' }],
    }),
  );
  t.deepEqual(errors, [
    'spec.initContainers[0].image: Required value',
    `spec.initContainers[0].env[0].name: Invalid value: "A=B": a valid environment variable name must consist only of printable ASCII characters other than '='`,
    'spec.initContainers[0].env[1].name: Required value',
    'spec.terminationGracePeriodSeconds: Invalid value: -5: must be greater than or equal to 0',
  ]);
});

test('labels and annotations keys are qualified names', (t) => {
  const errors = messages(
    pod(web().spec as never, {
      name: 'web',
      labels: { 'app/x/y': 'a', ok: 'bad value' },
      annotations: { '-x': '1' },
    }),
  );
  t.is(errors.length, 3);
  t.true(errors.every((e) => e.startsWith('metadata.labels') || e.startsWith('metadata.annotations')));
});

test('validatePod does not throw on malformed shapes', (t) => {
  t.notThrows(() =>
    validatePod({
      metadata: 'x',
      spec: { containers: 'web', volumes: {}, initContainers: [null, 3] },
    } as never),
  );
  t.deepEqual(messages({ metadata: { name: 'x' }, spec: { containers: 'web' } } as never), [
    'spec.containers: Required value',
  ]);
});

test('findUnknownFields walks the client library schema', (t) => {
  const p = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'web', labels: { 'app.kubernetes.io/name': 'web' }, annotations: { any: 'thing' } },
    spec: {
      containers: [
        {
          name: 'web',
          image: 'nginx',
          imagePullPolcy: 'Always',
          ports: [{ containerPort: 80, hostIP: '0.0.0.0', nmae: 'http' }],
          livenessProbe: { httpGet: { port: 'http', path: '/' }, periodSecond: 5 },
          resources: { limits: { cpu: 1, memory: '64Mi' } },
        },
      ],
      volumes: [{ name: 'd', emptyDir: { sizeLimit: '1Gi', medium: '' }, emtpyDir: {} }],
      nodeSelector: { 'kubernetes.io/os': 'linux' },
      tolerations: [{ operator: 'Exists', effect: 'NoExecute' }],
      restartPolcy: 'Always',
    },
    status: { phase: 'Pending', startTime: '2026-01-01T00:00:00Z' },
    extra: true,
  };
  t.deepEqual(findUnknownFields(p, 'V1Pod'), [
    'spec.containers[0].imagePullPolcy',
    'spec.containers[0].ports[0].nmae',
    'spec.containers[0].livenessProbe.periodSecond',
    'spec.volumes[0].emtpyDir',
    'spec.restartPolcy',
    'extra',
  ]);
  t.deepEqual(
    findUnknownFields({ metadata: { continue: 'x', resourceVersion: '1' }, items: [] }, 'V1PodList'),
    [],
  );
});

test('findSchemaErrors reports values of the wrong JSON type; quantities take numbers', (t) => {
  const errors = findSchemaErrors(
    {
      metadata: { name: 'web', labels: { tier: 1 }, annotations: ['x'] },
      spec: {
        containers: {
          name: 'web',
        },
        initContainers: [
          {
            name: 'i',
            ports: [{ containerPort: '80' }],
            resources: { requests: { cpu: 0.5 } },
            livenessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 1.5 },
            tty: 'yes',
          },
        ],
      },
    },
    'V1Pod',
  ).map(formatFieldError);
  t.deepEqual(errors, [
    'metadata.labels.tier: Invalid value: 1: must be a string; quote it',
    'metadata.annotations: Invalid value: ["x"]: must be a map, not a list',
    'spec.containers: Invalid value: {"name":"web"}: must be a list, not an object',
    'spec.initContainers[0].ports[0].containerPort: Invalid value: "80": must be an integer, not a string',
    'spec.initContainers[0].livenessProbe.periodSeconds: Invalid value: 1.5: must be an integer, not a fraction',
    'spec.initContainers[0].tty: Invalid value: "yes": must be a boolean (true or false)',
  ]);
  t.throws(() => findSchemaErrors({}, 'NoSuchKind'), { message: /not a model/ });
});

test('applyPodDefaults fills what the API server would, and keeps what is set', (t) => {
  const input = pod({
    hostNetwork: true,
    restartPolicy: 'Never',
    containers: [
      {
        name: 'a',
        image: 'registry:5000/nginx',
        ports: [{ containerPort: 80 }],
        livenessProbe: { httpGet: { port: 80 } },
        resources: { limits: { cpu: '1' } },
      },
      { name: 'b', image: 'nginx:1.27', imagePullPolicy: 'Never' },
      { name: 'c', image: 'nginx:1.27' },
    ],
    volumes: [{ name: 'cm', configMap: { name: 'x' } }],
  });
  const out = applyPodDefaults(input);
  t.not(out, input);
  t.is(input.spec!.dnsPolicy, undefined, 'input untouched');
  const spec = out.spec!;
  t.is(spec.restartPolicy, 'Never');
  t.is(spec.dnsPolicy, 'ClusterFirst');
  t.is(spec.terminationGracePeriodSeconds, 30);
  t.is(spec.schedulerName, 'default-scheduler');
  const [a, b, c] = spec.containers;
  t.is(a!.imagePullPolicy, 'Always');
  t.is(b!.imagePullPolicy, 'Never');
  t.is(c!.imagePullPolicy, 'IfNotPresent');
  t.is(a!.terminationMessagePath, '/dev/termination-log');
  t.is(a!.terminationMessagePolicy, 'File');
  t.deepEqual(a!.ports, [{ containerPort: 80, hostPort: 80, protocol: 'TCP' }]);
  t.deepEqual(a!.resources!.requests, { cpu: '1' });
  t.deepEqual(a!.livenessProbe, {
    httpGet: { port: 80, path: '/', scheme: 'HTTP' },
    timeoutSeconds: 1,
    periodSeconds: 10,
    successThreshold: 1,
    failureThreshold: 3,
  });
  t.is(spec.volumes![0]!.configMap!.defaultMode, 0o644);
});
