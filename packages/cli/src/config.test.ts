import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { createLogger, MemorySink } from '@nodelet/kernel';
import { buildKernel, logLevelFor, parseKubeletArgs } from './kubelet-command.js';
import { defaultDirs, parseHeaderFlags, resolveKubeletSetup, type SetupEnv } from './kubelet-setup.js';
import { checkRuntimeName, loadRuntime, runtimeAliases } from './plugins.js';

function tmp(t: { teardown: (fn: () => void) => void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-cli-config-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function env(cwd: string, sink = new MemorySink(), overrides: Partial<SetupEnv> = {}): SetupEnv {
  return {
    cwd,
    hostname: 'My-Host',
    isRoot: false,
    homeDir: '/home/ada',
    ipv4: ['192.0.2.7', '198.51.100.1'],
    logger: createLogger({ sink: sink.sink }),
    ...overrides,
  };
}

const kubeletConfig = (extra = '') => `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
staticPodPath: ./kc-manifests
readOnlyPort: 10300
address: 127.0.0.3
podLogsDir: /kc/logs
fileCheckFrequency: 5s
${extra}`;

test('defaults: hostname in lower case, fake runtime, home directories, 10255 on 127.0.0.1, first IPv4', (t) => {
  const dir = tmp(t);
  const setup = resolveKubeletSetup({}, env(dir));
  t.deepEqual(setup.kubelet, {
    nodeName: 'my-host',
    hostIP: '192.0.2.7',
    rootDir: '/home/ada/.nodelet/kubelet',
    podLogsDir: '/home/ada/.nodelet/pods-logs',
    readOnlyPort: 10255,
    address: '127.0.0.1',
    tmpfsVolumes: false, // the fake runtime's pods mount nothing on the host
    // The flags' defaults for the kubelet API (a KubeletConfiguration's differ).
    server: {
      port: 10250,
      certDir: '/home/ada/.nodelet/kubelet/pki',
      authentication: {
        x509: {},
        webhook: { enabled: false, cacheTTLMs: 120_000 },
        anonymous: { enabled: true },
      },
      authorization: {
        mode: 'AlwaysAllow',
        webhook: { cacheAuthorizedTTLMs: 300_000, cacheUnauthorizedTTLMs: 30_000 },
      },
    },
  });
  t.is(setup.runtime.name, 'fake');
  t.deepEqual(defaultDirs({ isRoot: true, homeDir: '/root' }), {
    rootDir: '/var/lib/kubelet',
    podLogsDir: '/var/log/pods',
  });
  t.is(resolveKubeletSetup({}, env(dir, undefined, { ipv4: [] })).kubelet.hostIP, '127.0.0.1');
});

test('a KubeletConfiguration given to --config: its fields, paths relative to it', (t) => {
  const dir = tmp(t);
  const sink = new MemorySink();
  writeFileSync(join(dir, 'kubelet.yaml'), kubeletConfig('registryPullQPS: 5\n'));
  const setup = resolveKubeletSetup({ config: join(dir, 'kubelet.yaml') }, env('/elsewhere', sink));
  t.like(setup.kubelet, {
    podManifestPath: join(dir, 'kc-manifests'),
    readOnlyPort: 10300,
    address: '127.0.0.3',
    podLogsDir: '/kc/logs',
    fileCheckFrequencyMs: 5000,
  });
  t.is(sink.find('"registryPullQPS" is not supported by nodelet yet').length, 1);
});

test('KubeletConfiguration maxPods bounds a standalone kubelet too (its admission), not only a joined one', (t) => {
  const dir = tmp(t);
  const sink = new MemorySink();
  writeFileSync(join(dir, 'kubelet.yaml'), kubeletConfig('maxPods: 7\n'));
  const setup = resolveKubeletSetup({ config: join(dir, 'kubelet.yaml') }, env('/elsewhere', sink));
  t.is(setup.kubelet.maxPods, 7);
  t.is(setup.kubelet.apiServer, undefined);
  t.is(sink.find('"maxPods" is not supported').length, 0);
  writeFileSync(join(dir, 'bad.yaml'), kubeletConfig('maxPods: 0\n'));
  t.throws(() => resolveKubeletSetup({ config: join(dir, 'bad.yaml') }, env('/elsewhere')), {
    message: /maxPods/,
  });
});

test('KubeletConfiguration: API client limits, node status and lease timing reach the API connection', (t) => {
  const dir = tmp(t);
  const sink = new MemorySink();
  writeFileSync(
    join(dir, 'kubelet.yaml'),
    kubeletConfig(
      'nodeStatusUpdateFrequency: 4s\nnodeStatusReportFrequency: 1m\nnodeLeaseDurationSeconds: 20\n' +
        'kubeAPIQPS: 5\nkubeAPIBurst: 10\neventRecordQPS: 2\neventBurst: 3\n',
    ),
  );
  const setup = resolveKubeletSetup(
    { config: join(dir, 'kubelet.yaml'), kubeconfig: join(dir, 'kubeconfig') },
    env('/elsewhere', sink),
  );
  t.like(setup.kubelet.apiServer, {
    nodeStatusUpdateFrequencyMs: 4000,
    nodeStatusReportFrequencyMs: 60_000,
    nodeLeaseDurationSeconds: 20,
    kubeAPIQPS: 5,
    kubeAPIBurst: 10,
    eventRecordQPS: 2,
    eventBurst: 3,
  });
  t.is(sink.find('is not supported by nodelet yet').length, 0);
  writeFileSync(join(dir, 'bad.yaml'), kubeletConfig('nodeStatusUpdateFrequency: 0s\n'));
  t.throws(() => resolveKubeletSetup({ config: join(dir, 'bad.yaml') }, env('/elsewhere')), {
    message: /nodeStatusUpdateFrequency.*above 0/,
  });
});

test('precedence: flags > NodeletConfiguration > KubeletConfiguration > defaults', (t) => {
  const dir = tmp(t);
  writeFileSync(join(dir, 'kubelet.yaml'), kubeletConfig());
  writeFileSync(
    join(dir, 'nodelet.yaml'),
    `apiVersion: nodelet.dev/v1alpha1
kind: NodeletConfiguration
nodeName: Config-Node
runtime: fake
kubelet:
  kubeletConfig: ./kubelet.yaml
  readOnlyPort: 10400
  rootDir: ./root
  manifestURL: http://config.example/pods
  manifestURLHeader: { X-A: "1", X-B: ["2", "3"] }
plugins:
  runtime-fake: { pullLatencyMs: 5 }
`,
  );
  const file = join(dir, 'nodelet.yaml');

  const fromFiles = resolveKubeletSetup({ config: file }, env('/cwd'));
  t.like(fromFiles.kubelet, {
    nodeName: 'config-node', // nodelet config, lower-cased
    readOnlyPort: 10400, // nodelet config over KubeletConfiguration's 10300
    address: '127.0.0.3', // KubeletConfiguration over the default
    podManifestPath: join(dir, 'kc-manifests'), // KubeletConfiguration, relative to its file
    rootDir: join(dir, 'root'), // nodelet config, relative to its file
    podLogsDir: '/kc/logs',
    manifestUrl: 'http://config.example/pods',
    manifestUrlHeaders: { 'X-A': '1', 'X-B': '2, 3' },
  });
  t.deepEqual(fromFiles.plugins, { 'runtime-fake': { pullLatencyMs: 5 } });
  t.is(fromFiles.runtime.baseDir, dir);

  const withFlags = resolveKubeletSetup(
    {
      config: file,
      hostnameOverride: 'Flag-Node',
      readOnlyPort: 0,
      address: '0.0.0.0',
      podManifestPath: 'm',
      rootDir: 'r',
      nodeIp: '203.0.113.9',
      manifestUrl: 'http://flag.example/pods',
      manifestUrlHeader: ['a:hello,b:again', 'b:beautiful'],
    },
    env('/cwd'),
  );
  t.like(withFlags.kubelet, {
    nodeName: 'flag-node',
    readOnlyPort: 0,
    address: '0.0.0.0',
    podManifestPath: '/cwd/m',
    rootDir: '/cwd/r',
    hostIP: '203.0.113.9',
    manifestUrl: 'http://flag.example/pods',
    manifestUrlHeaders: { a: 'hello', b: 'again, beautiful' },
  });
});

test('flags: parsed like the upstream kubelet, errors in one line pointing at --help', (t) => {
  const { flags } = parseKubeletArgs([
    '--pod-manifest-path=/etc/kubernetes/manifests',
    '--read-only-port',
    '0',
    '--v=3',
    '--manifest-url-header',
    'a:1',
    '--manifest-url-header=b:2',
  ]);
  t.deepEqual(flags, {
    podManifestPath: '/etc/kubernetes/manifests',
    readOnlyPort: 0,
    v: 3,
    manifestUrlHeader: ['a:1', 'b:2'],
  });
  t.is(logLevelFor(flags.v), 'debug');
  t.is(logLevelFor(undefined), 'info');
  t.is(parseKubeletArgs(['-h']).help, true);
  t.is(parseKubeletArgs(['-v=4']).flags.v, 4);
  t.is(parseKubeletArgs(['-v', '1']).flags.v, 1);

  t.throws(() => parseKubeletArgs(['--foo']), { message: 'unknown flag --foo; see nodelet kubelet --help' });
  t.throws(() => parseKubeletArgs(['--foo=bar']), {
    message: 'unknown flag --foo; see nodelet kubelet --help',
  });
  t.throws(() => parseKubeletArgs(['--read-only-port', 'http']), {
    message: 'flag --read-only-port must be an integer from 0 to 65535, got "http"',
  });
  t.throws(() => parseKubeletArgs(['--root-dir']), { message: /^flag --root-dir needs a value/ });
  t.throws(() => parseKubeletArgs(['extra']), {
    message: 'unexpected argument "extra"; see nodelet kubelet --help',
  });
  t.throws(() => parseHeaderFlags(['novalue']), {
    message: 'flag --manifest-url-header: "novalue" is not Key:Value',
  });
  t.throws(() => resolveKubeletSetup({ nodeIp: 'localhost' }, env('/')), {
    message: /--node-ip must be an IP address/,
  });
});

test('bad YAML in --config names the file and the line', (t) => {
  const dir = tmp(t);
  const file = join(dir, 'nodelet.yaml');
  writeFileSync(
    file,
    'apiVersion: nodelet.dev/v1alpha1\nkind: NodeletConfiguration\nkubelet:\n  rootDir: [unclosed\n',
  );
  const err = t.throws(() => resolveKubeletSetup({ config: file }, env(dir)));
  t.regex(err!.message, new RegExp(`^${file}: not valid YAML \\(line \\d+, column \\d+\\)`));
  t.notRegex(err!.message, /\n/);
});

test('NodeletConfiguration errors name the file and the field', (t) => {
  const dir = tmp(t);
  const file = join(dir, 'nodelet.yaml');
  const check = (body: string, message: string | RegExp) => {
    writeFileSync(file, `apiVersion: nodelet.dev/v1alpha1\nkind: NodeletConfiguration\n${body}`);
    t.throws(() => resolveKubeletSetup({ config: file }, env(dir)), { message }, body);
  };
  check('kubelet:\n  readOnlyPort: http\n', `${file}: field "kubelet.readOnlyPort" must be of type integer`);
  check(
    'kubelet:\n  staticPodPath: ./m\n',
    `${file}: unknown field "kubelet.staticPodPath"; remove it or check its spelling`,
  );
  check('nodname: x\n', `${file}: unknown field "nodname"; remove it or check its spelling`);
  check('runtime: 7\n', `${file}: field "runtime" must be of type string`);
  check(
    'runtime: Docker Engine\n',
    `${file}: field "runtime" must be one of "fake", "containerd", "crio", or an npm package or path that exports a nodelet plugin; got "Docker Engine"`,
  );
  check(
    'runtime: Fake\n',
    /must be one of "fake", "containerd", "crio".*got "Fake" \(did you mean "fake"\?\)$/,
  );
  check(
    'kubelet:\n  kubeletConfig: ./missing.yaml\n',
    new RegExp(`^${dir}/missing.yaml: cannot read the file`),
  );

  writeFileSync(file, 'apiVersion: v1\nkind: Pod\n');
  t.throws(() => resolveKubeletSetup({ config: file }, env(dir)), {
    message: `${file}: expected kind "NodeletConfiguration" (apiVersion "nodelet.dev/v1alpha1") or "KubeletConfiguration" (apiVersion "kubelet.config.k8s.io/v1beta1"), got kind "Pod"`,
  });
  writeFileSync(
    file,
    'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nstaticPodPth: /x\n',
  );
  t.throws(() => resolveKubeletSetup({ config: file }, env(dir)), {
    message: /unknown KubeletConfiguration field "staticPodPth"/,
  });
});

test('runtime: the table of built-ins (fake, containerd, crio), packages and paths are imported', async (t) => {
  t.deepEqual(Object.keys(runtimeAliases), ['fake', 'containerd', 'crio']);
  const fake = await loadRuntime({ name: 'fake', origin: 'flag --runtime', baseDir: '/' });
  t.is(fake.manifest.name, 'runtime-fake');
  const containerd = await loadRuntime({ name: 'containerd', origin: 'flag --runtime', baseDir: '/' });
  t.is(containerd.manifest.name, 'runtime-containerd');
  const crio = await loadRuntime({ name: 'crio', origin: 'flag --runtime', baseDir: '/' });
  t.is(crio.manifest.name, 'runtime-crio');
  await t.throwsAsync(
    loadRuntime({ name: 'nodelet-runtime-nonexistent', origin: 'flag --runtime', baseDir: '/' }),
    {
      message:
        'flag --runtime: cannot load runtime package "nodelet-runtime-nonexistent": it is not installed; the runtime must be one of "fake", "containerd", "crio", or an npm package or path that exports a nodelet plugin',
    },
  );
  t.throws(() => checkRuntimeName({ name: 'not a package', origin: 'flag --runtime', baseDir: '/' }), {
    message: /^flag --runtime must be one of "fake", "containerd", "crio", or an npm package or path/,
  });

  const dir = tmp(t);
  writeFileSync(
    join(dir, 'tiny.mjs'),
    "export const plugin = { manifest: { name: 'tiny', version: '1.0.0', provides: [], requires: [] }, register() {} };",
  );
  t.is(
    (await loadRuntime({ name: './tiny.mjs', origin: 'flag --runtime', baseDir: dir })).manifest.name,
    'tiny',
  );
  t.is(
    (await loadRuntime({ name: join(dir, 'tiny.mjs'), origin: 'flag --runtime', baseDir: '/' })).manifest
      .name,
    'tiny',
  );
  writeFileSync(join(dir, 'not-a-plugin.mjs'), 'export default { hello: "world" };');
  await t.throwsAsync(
    loadRuntime({ name: './not-a-plugin.mjs', origin: 'x.yaml: field "runtime"', baseDir: dir }),
    {
      message:
        'x.yaml: field "runtime": runtime path "./not-a-plugin.mjs" does not export a nodelet plugin (a default or named "plugin" export with a manifest and register()): register is not a function',
    },
  );
  await t.throwsAsync(loadRuntime({ name: './missing.mjs', origin: 'flag --runtime', baseDir: dir }), {
    message: /^flag --runtime: cannot load runtime path "\.\/missing\.mjs": no such file/,
  });
});

test('plugins.<name> config reaches the plugin; its errors name the file; unknown sections are reported', async (t) => {
  const dir = tmp(t);
  const file = join(dir, 'nodelet.yaml');
  writeFileSync(
    file,
    'apiVersion: nodelet.dev/v1alpha1\nkind: NodeletConfiguration\nplugins:\n  runtime-fake: { pullLatencyMs: -1 }\n  other: {}\n',
  );
  const sink = new MemorySink();
  const logger = createLogger({ sink: sink.sink });
  const setup = resolveKubeletSetup({ config: file, rootDir: dir, readOnlyPort: 0, port: 0 }, env(dir, sink));
  const kernel = await buildKernel(setup, logger);
  t.is(sink.find(`${file}: plugins.other configures a plugin that is not loaded; ignoring it`).length, 1);
  await t.throwsAsync(kernel.start(), {
    message: `${file}: plugins.runtime-fake: field "pullLatencyMs" must be >= 0`,
  });
});

test('a runtime plugin that does not provide cri.runtime fails to link, naming what is missing', async (t) => {
  const dir = tmp(t);
  writeFileSync(
    join(dir, 'tiny.mjs'),
    "export default { manifest: { name: 'tiny', version: '1.0.0', provides: [], requires: [] }, register() {} };",
  );
  const sink = new MemorySink();
  const setup = resolveKubeletSetup(
    { runtime: './tiny.mjs', rootDir: dir, readOnlyPort: 0, port: 0 },
    env(dir, sink),
  );
  const kernel = await buildKernel(setup, createLogger({ sink: sink.sink }));
  await t.throwsAsync(kernel.start(), {
    name: 'LinkError',
    message: /^plugin 'kubelet' requires capability 'cri\.(runtime|image)', but no loaded plugin provides it/,
  });
});

test('CRI endpoints: flags over plugins.<name>, over the KubeletConfiguration, over the runtime default', async (t) => {
  const dir = tmp(t);
  const kc = join(dir, 'kubelet-config.yaml');
  writeFileSync(
    kc,
    `apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncontainerRuntimeEndpoint: unix://${dir}/kc.sock\nruntimeRequestTimeout: 30s\n`,
  );
  const nodelet = (section: string) => {
    const file = join(dir, 'nodelet.yaml');
    writeFileSync(
      file,
      `apiVersion: nodelet.dev/v1alpha1\nkind: NodeletConfiguration\nruntime: containerd\nkubelet:\n  kubeletConfig: ./kubelet-config.yaml\n${section}`,
    );
    return file;
  };
  /** Which socket the started runtime plugin tried: its startup error names it. */
  const triedSocket = async (flags: Parameters<typeof resolveKubeletSetup>[0]) => {
    const sink = new MemorySink();
    const setup = resolveKubeletSetup({ rootDir: dir, readOnlyPort: 0, port: 0, ...flags }, env(dir, sink));
    const kernel = await buildKernel(setup, createLogger({ sink: sink.sink }));
    const err = await t.throwsAsync(kernel.start());
    return (
      /^cannot connect to containerd at (\S+): no such socket/.exec(err?.message ?? '')?.[1] ?? err?.message
    );
  };

  t.is(await triedSocket({ config: nodelet('') }), `unix://${dir}/kc.sock`);
  const withSection = nodelet(
    `plugins:\n  runtime-containerd:\n    runtimeEndpoint: unix://${dir}/section.sock\n`,
  );
  t.is(await triedSocket({ config: withSection }), `unix://${dir}/section.sock`);
  t.is(
    await triedSocket({ config: withSection, containerRuntimeEndpoint: `unix://${dir}/flag.sock` }),
    `unix://${dir}/flag.sock`,
  );
  t.deepEqual(
    parseKubeletArgs(['--container-runtime-endpoint', '/a.sock', '--image-service-endpoint', '/b.sock'])
      .flags,
    {
      containerRuntimeEndpoint: '/a.sock',
      imageServiceEndpoint: '/b.sock',
    },
  );
});

test('CRI endpoints with a runtime that takes none: a flag is refused, a KubeletConfiguration field is reported', async (t) => {
  const dir = tmp(t);
  const sink = new MemorySink();
  const logger = createLogger({ sink: sink.sink });
  const flagged = resolveKubeletSetup(
    {
      rootDir: dir,
      readOnlyPort: 0,
      port: 0,
      containerRuntimeEndpoint: 'unix:///run/containerd/containerd.sock',
    },
    env(dir, sink),
  );
  await t.throwsAsync(buildKernel(flagged, logger), {
    message:
      'flag --container-runtime-endpoint needs a CRI runtime, but the runtime is "fake" (the default runtime); add --runtime containerd (or crio)',
  });
  const kc = join(dir, 'kubelet-config.yaml');
  writeFileSync(
    kc,
    'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncontainerRuntimeEndpoint: unix:///run/containerd/containerd.sock\n',
  );
  await buildKernel(
    resolveKubeletSetup({ config: kc, rootDir: dir, readOnlyPort: 0, port: 0 }, env(dir, sink)),
    logger,
  );
  t.is(
    sink.find('the KubeletConfiguration names a CRI endpoint, but the runtime does not use one').length,
    1,
  );
});

test('the kubelet API: KubeletConfiguration fields with the file defaults, flags over them, errors by name', (t) => {
  const dir = tmp(t);
  const write = (extra: string) => {
    writeFileSync(
      join(dir, 'kc.yaml'),
      `apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n${extra}`,
    );
    return join(dir, 'kc.yaml');
  };
  // A file without the fields: upstream's file defaults (webhook on, anonymous off, Webhook; read-only off).
  const plain = resolveKubeletSetup({ config: write('') }, env(dir));
  t.is(plain.kubelet.readOnlyPort, 0);
  t.like(plain.kubelet.server, {
    port: 10250,
    authentication: {
      x509: {},
      webhook: { enabled: true, cacheTTLMs: 120_000 },
      anonymous: { enabled: false },
    },
    authorization: { mode: 'Webhook' },
  });
  const file = write(`port: 10260
tlsCertFile: ./tls.crt
tlsPrivateKeyFile: ./tls.key
tlsMinVersion: VersionTLS13
tlsCipherSuites: [TLS_AES_128_GCM_SHA256, TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]
serverTLSBootstrap: true
authentication:
  x509: {clientCAFile: ./ca.crt}
  webhook: {enabled: false, cacheTTL: 10s}
  anonymous: {enabled: true}
authorization:
  mode: AlwaysAllow
  webhook: {cacheAuthorizedTTL: 1m, cacheUnauthorizedTTL: 5s}
`);
  const fromFile = resolveKubeletSetup({ config: file }, env('/cwd'));
  t.deepEqual(fromFile.kubelet.server, {
    port: 10260,
    tlsCertFile: join(dir, 'tls.crt'),
    tlsPrivateKeyFile: join(dir, 'tls.key'),
    certDir: '/home/ada/.nodelet/kubelet/pki',
    tlsMinVersion: 'TLSv1.3',
    tlsCipherSuites: 'TLS_AES_128_GCM_SHA256:ECDHE-RSA-AES128-GCM-SHA256',
    serverTLSBootstrap: true,
    authentication: {
      x509: { clientCAFile: join(dir, 'ca.crt') },
      webhook: { enabled: false, cacheTTLMs: 10_000 },
      anonymous: { enabled: true },
    },
    authorization: {
      mode: 'AlwaysAllow',
      webhook: { cacheAuthorizedTTLMs: 60_000, cacheUnauthorizedTTLMs: 5_000 },
    },
  });
  const flagged = resolveKubeletSetup(
    {
      ...parseKubeletArgs([
        '--port=0',
        '--client-ca-file=other.crt',
        '--anonymous-auth=false',
        '--authentication-token-webhook=true',
        '--authorization-mode=Webhook',
      ]).flags,
      config: file,
    },
    env('/cwd'),
  );
  t.like(flagged.kubelet.server, {
    port: 0,
    authentication: {
      x509: { clientCAFile: '/cwd/other.crt' },
      webhook: { enabled: true },
      anonymous: { enabled: false },
    },
    authorization: { mode: 'Webhook' },
  });

  for (const [body, message] of [
    ['port: 70000\n', /field "port" must be an integer from 0 to 65535/],
    [
      'tlsMinVersion: TLS1.2\n',
      /field "tlsMinVersion" must be one of VersionTLS10, VersionTLS11, VersionTLS12, VersionTLS13/,
    ],
    ['tlsCertFile: a.crt\n', /fields "tlsCertFile" and "tlsPrivateKeyFile" go together/],
    [
      'authentication:\n  anonymous: {enabled: "yes"}\n',
      /field "authentication.anonymous.enabled" must be true or false/,
    ],
    [
      'authentication:\n  x509: {clientCaFile: a}\n',
      /unknown field "authentication.x509.clientCaFile"; known: clientCAFile/,
    ],
    ['authentication:\n  webhook: {cacheTTL: soon}\n', /authentication.webhook.cacheTTL/],
    [
      'authorization:\n  mode: RBAC\n',
      /field "authorization.mode" must be Webhook or AlwaysAllow, got "RBAC"/,
    ],
    ['authorization: [Webhook]\n', /field "authorization" must be a mapping/],
    ['serverTLSBootstrap: 1\n', /field "serverTLSBootstrap" must be true or false/],
    ['tlsCipherSuites: [RC4]\n', /field "tlsCipherSuites": unknown TLS cipher suite "RC4"/],
  ] as const) {
    const path = write(body);
    t.throws(
      () => resolveKubeletSetup({ config: path }, env(dir)),
      { message: new RegExp(`^${path}: .*${message.source}`) },
      body,
    );
  }
  t.throws(() => resolveKubeletSetup({ tlsMinVersion: 'TLS13' }, env(dir)), {
    message:
      'flag --tls-min-version must be one of VersionTLS10, VersionTLS11, VersionTLS12, VersionTLS13, got "TLS13"',
  });
  t.throws(() => resolveKubeletSetup(parseKubeletArgs(['--tls-cipher-suites=TLS_NOPE']).flags, env(dir)), {
    message: /^flag --tls-cipher-suites: unknown TLS cipher suite "TLS_NOPE"; known: TLS_AES_128_GCM_SHA256/,
  });
  t.throws(() => parseKubeletArgs(['--port=-1']), {
    message: 'flag --port must be an integer from 0 to 65535, got "-1"',
  });
  t.throws(() => parseKubeletArgs(['--anonymous-auth=maybe']), {
    message: 'flag --anonymous-auth must be true or false, got "maybe"',
  });
  t.throws(() => parseKubeletArgs(['--authorization-mode', 'RBAC']), {
    message: 'flag --authorization-mode must be AlwaysAllow or Webhook, got "RBAC"',
  });
  t.throws(() => resolveKubeletSetup({ tlsCertFile: 'a.crt' }, env(dir)), {
    message: 'flags --tls-cert-file and --tls-private-key-file go together: set both or neither',
  });
});

test('the kubelet API listens on 0.0.0.0 when it is authenticated and authorized, on 127.0.0.1 when anonymous requests may do anything', (t) => {
  const dir = tmp(t);
  const secure = `apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n`;
  writeFileSync(join(dir, 'kubelet.yaml'), secure);
  // A KubeletConfiguration's defaults: anonymous off, Webhook authorization — upstream's 0.0.0.0.
  t.is(resolveKubeletSetup({ config: join(dir, 'kubelet.yaml') }, env(dir)).kubelet.address, '0.0.0.0');
  const sink = new MemorySink();
  // The flags' defaults: anonymous on, AlwaysAllow — kept on loopback; said so when the node joins a
  // cluster, whose API server then cannot reach it.
  t.is(resolveKubeletSetup({}, env(dir, sink)).kubelet.address, '127.0.0.1');
  t.is(sink.find('listens on 127.0.0.1 only').length, 0);
  const joined = resolveKubeletSetup({ kubeconfig: join(dir, 'kubeconfig') }, env(dir, sink));
  t.is(joined.kubelet.address, '127.0.0.1');
  t.is(sink.find('listens on 127.0.0.1 only').length, 1);
  t.is(resolveKubeletSetup({ authorizationMode: 'Webhook' }, env(dir)).kubelet.address, '0.0.0.0');
  t.is(resolveKubeletSetup({ address: '0.0.0.0' }, env(dir)).kubelet.address, '0.0.0.0');
  writeFileSync(join(dir, 'open.yaml'), `${secure}address: 127.0.0.5\n`);
  t.is(resolveKubeletSetup({ config: join(dir, 'open.yaml') }, env(dir)).kubelet.address, '127.0.0.5');
});
