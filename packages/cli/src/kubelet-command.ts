import type { Clock, Kernel, Logger, LogLevel } from '@nodelet/kernel';
import { intFlag, parseFlags } from './args.js';
import { containerGCHelp, containerGCOptions, parseContainerGCFlags } from './container-gc-flags.js';
import { CliError } from './errors.js';
import type { KubeletFlags, KubeletSetup } from './kubelet-setup.js';

// Flags and help load nothing heavy; the kernel, the kubelet and the runtime are imported only to run.

export const kubeletHelp = `Run the kubelet: the node agent that runs pods through a container runtime.

Usage:
  nodelet kubelet [flags]

Pod sources:
  --pod-manifest-path DIR        static pod manifests (*.yaml, *.yml, *.json), watched for changes
  --manifest-url URL             pod manifests served over HTTP, polled
  --manifest-url-header K:V      header sent with --manifest-url (K:V,K2:V2; repeatable)

Joining a cluster:
  --kubeconfig FILE              kubeconfig of the API server to join: the node registers, runs the pods
                                 bound to it and reports their status (client certificates, tokens and
                                 exec credential plugins as @kubernetes/client-node supports them)
  --bootstrap-kubeconfig FILE    TLS bootstrap: when --kubeconfig does not exist yet, request a client
                                 certificate (CSR for system:node:<node>) with these credentials, then
                                 write --kubeconfig (default <root-dir>/kubeconfig)
  --node-labels K=V[,K=V]        labels to register the node with
  --register-with-taints K[=V]:EFFECT[,…]
                                 taints to register the node with (NoSchedule, PreferNoSchedule, NoExecute)

Configuration:
  --config FILE                  a NodeletConfiguration (apiVersion nodelet.dev/v1alpha1) or an upstream
                                 KubeletConfiguration (kubelet.config.k8s.io/v1beta1)
  --runtime NAME                 fake | containerd | crio | an npm package or path exporting a plugin
                                 (default fake)
  --container-runtime-endpoint E the CRI runtime's socket, e.g. unix:///run/containerd/containerd.sock
                                 (default: the runtime's own; for containerd, crio and CRI plugins)
  --image-service-endpoint E     the CRI image service's socket (default: the runtime endpoint)
  --hostname-override NAME       node name (default: the hostname, in lower case)
  --node-ip IP                   the node's IP (default: the first non-loopback IPv4 address)
  --root-dir DIR                 kubelet root directory, for volumes
                                 (default /var/lib/kubelet as root, else ~/.nodelet/kubelet)
  --read-only-port N             read-only HTTP port serving /healthz, /pods, /spec, /stats and /metrics
                                 without authentication; 0 disables it (default 10255; 0 in a
                                 KubeletConfiguration file)
  --address IP                   address the kubelet's ports bind to (default 127.0.0.1)

${containerGCHelp}
The kubelet API (HTTPS: /pods, /containerLogs, /logs, /exec, …):
  --port N                       its port (default 10250; 0 picks a free one)
  --tls-cert-file FILE           serving certificate (default: self-signed <cert-dir>/kubelet.crt)
  --tls-private-key-file FILE    its key (with --tls-cert-file)
  --cert-dir DIR                 where the self-signed pair lives (default <root-dir>/pki)
  --tls-min-version V            VersionTLS10 … VersionTLS13 (default: Node's, TLS 1.2)
  --tls-cipher-suites A,B        Go cipher suite names, e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256
  --client-ca-file FILE          client certificates signed by this CA authenticate (CN user, O groups)
  --authentication-token-webhook=true|false
                                 bearer tokens are checked with a TokenReview (default false)
  --anonymous-auth=true|false    requests without credentials are system:anonymous (default true)
  --authorization-mode MODE      AlwaysAllow or Webhook (SubjectAccessReview; default AlwaysAllow)
                                 (a KubeletConfiguration's defaults differ: webhook on, anonymous off,
                                 Webhook — as upstream)
  --v N                          log verbosity: 0-1 info, 2 and up debug (default 0)
  -h, --help                     show this help

Precedence: flags, then the NodeletConfiguration, then its KubeletConfiguration, then defaults.
Stop it with SIGINT or SIGTERM; pods keep running in the runtime and are adopted on the next start.

Examples:
  nodelet kubelet --pod-manifest-path ./examples/manifests
  nodelet kubelet --config ./examples/nodelet.yaml
  nodelet get pods
`;

const options = {
  'pod-manifest-path': { type: 'string' },
  'manifest-url': { type: 'string' },
  'manifest-url-header': { type: 'string', multiple: true },
  config: { type: 'string' },
  runtime: { type: 'string' },
  'container-runtime-endpoint': { type: 'string' },
  'image-service-endpoint': { type: 'string' },
  'hostname-override': { type: 'string' },
  kubeconfig: { type: 'string' },
  'bootstrap-kubeconfig': { type: 'string' },
  'node-labels': { type: 'string', multiple: true },
  'register-with-taints': { type: 'string', multiple: true },
  'node-ip': { type: 'string' },
  'root-dir': { type: 'string' },
  'read-only-port': { type: 'string' },
  address: { type: 'string' },
  port: { type: 'string' },
  'tls-cert-file': { type: 'string' },
  'tls-private-key-file': { type: 'string' },
  'cert-dir': { type: 'string' },
  'tls-min-version': { type: 'string' },
  'tls-cipher-suites': { type: 'string' },
  'client-ca-file': { type: 'string' },
  'authentication-token-webhook': { type: 'string' },
  'anonymous-auth': { type: 'string' },
  'authorization-mode': { type: 'string' },
  ...containerGCOptions,
  v: { type: 'string', short: 'v' },
  help: { type: 'boolean', short: 'h' },
} as const;

export interface ParsedKubeletArgs {
  help: boolean;
  flags: KubeletFlags;
}

export function parseKubeletArgs(args: readonly string[]): ParsedKubeletArgs {
  const { values, positionals } = parseFlags(args, options, 'nodelet kubelet');
  if (positionals.length > 0) {
    throw new CliError(`unexpected argument ${JSON.stringify(positionals[0])}; see nodelet kubelet --help`);
  }
  const flags: KubeletFlags = {};
  const set = <K extends keyof KubeletFlags>(key: K, value: KubeletFlags[K] | undefined) => {
    if (value !== undefined) flags[key] = value;
  };
  set('podManifestPath', values['pod-manifest-path']);
  set('manifestUrl', values['manifest-url']);
  set('manifestUrlHeader', values['manifest-url-header']);
  set('config', values.config);
  set('runtime', values.runtime);
  set('containerRuntimeEndpoint', values['container-runtime-endpoint']);
  set('imageServiceEndpoint', values['image-service-endpoint']);
  set('hostnameOverride', values['hostname-override']);
  set('kubeconfig', values.kubeconfig);
  set('bootstrapKubeconfig', values['bootstrap-kubeconfig']);
  set('nodeLabels', values['node-labels']);
  set('registerWithTaints', values['register-with-taints']);
  set('nodeIp', values['node-ip']);
  set('rootDir', values['root-dir']);
  set('readOnlyPort', intFlag('read-only-port', values['read-only-port'], 0, 65535));
  set('address', values.address);
  set('port', intFlag('port', values.port, 0, 65535));
  set('tlsCertFile', values['tls-cert-file']);
  set('tlsPrivateKeyFile', values['tls-private-key-file']);
  set('certDir', values['cert-dir']);
  set('tlsMinVersion', values['tls-min-version']);
  set(
    'tlsCipherSuites',
    values['tls-cipher-suites']
      ?.split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  );
  set('clientCaFile', values['client-ca-file']);
  set(
    'authenticationTokenWebhook',
    boolFlag('authentication-token-webhook', values['authentication-token-webhook']),
  );
  set('anonymousAuth', boolFlag('anonymous-auth', values['anonymous-auth']));
  const mode = values['authorization-mode'];
  if (mode !== undefined && mode !== 'AlwaysAllow' && mode !== 'Webhook') {
    throw new CliError(
      `flag --authorization-mode must be AlwaysAllow or Webhook, got ${JSON.stringify(mode)}`,
    );
  }
  set('authorizationMode', mode);
  // `-v=2` (Go's flag syntax, as klog users type it) reaches parseArgs as the short flag with value `=2`.
  const containerGC = parseContainerGCFlags(values);
  if (Object.keys(containerGC).length > 0) flags.containerGC = containerGC;
  set('v', intFlag('v', values.v?.replace(/^=/, ''), 0, 10));
  return { help: !!values.help, flags };
}

/** A Go bool flag given a value (`--anonymous-auth=false`). */
function boolFlag(name: string, value: string | undefined): boolean | undefined {
  if (value === undefined) return undefined;
  if (['true', '1', 't', 'T', 'TRUE', 'True'].includes(value)) return true;
  if (['false', '0', 'f', 'F', 'FALSE', 'False'].includes(value)) return false;
  throw new CliError(`flag --${name} must be true or false, got ${JSON.stringify(value)}`);
}

/** klog verbosity → logger level: 0-1 info, 2 and up debug. */
export function logLevelFor(v: number | undefined): LogLevel {
  return (v ?? 0) >= 2 ? 'debug' : 'info';
}

/**
 * Builds the kernel (not started) from a setup: the runtime plugin, the plugins the config lists, then
 * the kubelet. `runtime:` expands into an entry of the list; when nothing chose a runtime, a listed
 * plugin that provides `cri.runtime` is the runtime.
 */
export async function buildKernel(
  setup: KubeletSetup,
  logger: Logger,
  options: { clock?: Clock } = {},
): Promise<Kernel> {
  const [{ Kernel }, { kubeletPlugin }, { CriRuntime }, plugins, endpoints] = await Promise.all([
    import('@nodelet/kernel'),
    import('@nodelet/kubelet'),
    import('@nodelet/cri'),
    import('./plugins.js'),
    import('./cri-endpoints.js'),
  ]);
  const listed = await plugins.loadListed(setup.pluginList);
  const chosen = setup.runtime.origin !== plugins.DEFAULT_RUNTIME_ORIGIN;
  const listedRuntime = chosen
    ? undefined
    : listed.find((l) => plugins.providesCapability(l.plugin, CriRuntime.id));
  const runtime = listedRuntime?.plugin ?? (await plugins.loadRuntime(setup.runtime));
  const runtimeName = runtime.manifest.name;
  // The runtime's section: its list entry, else its `plugins.<name>` section.
  const entry = listedRuntime ?? listed.find((l) => l.plugin.manifest.name === runtimeName);
  const others = listed.filter((l) => l !== entry);
  const runtimeLabel = listedRuntime ? listedRuntime.spec.use : setup.runtime.name;
  const runtimeOrigin = listedRuntime ? listedRuntime.spec.origin : setup.runtime.origin;
  const kernel = new Kernel({ logger, ...(options.clock ? { clock: options.clock } : {}) });
  if (!endpoints.takesCriEndpoint(runtime)) {
    const flag = setup.criFlags?.runtimeEndpoint
      ? '--container-runtime-endpoint'
      : setup.criFlags?.imageEndpoint
        ? '--image-service-endpoint'
        : undefined;
    if (flag) {
      throw new CliError(
        `flag ${flag} needs a CRI runtime, but the runtime is ${JSON.stringify(runtimeLabel)} (${runtimeOrigin}); add --runtime containerd (or crio)`,
      );
    }
    if (setup.containerRuntimeEndpoint || setup.imageServiceEndpoint) {
      logger.warn(
        'the KubeletConfiguration names a CRI endpoint, but the runtime does not use one; ignoring it',
        {
          runtime: runtimeLabel,
          containerRuntimeEndpoint: setup.containerRuntimeEndpoint ?? '',
        },
      );
    }
  }
  const runtimeConfig = endpoints.runtimePluginConfig(
    runtime,
    (entry?.spec.config as Record<string, unknown> | undefined) ?? setup.plugins[runtimeName] ?? {},
    {
      runtimeEndpoint: setup.containerRuntimeEndpoint,
      imageEndpoint: setup.imageServiceEndpoint,
      runtimeRequestTimeoutMs: setup.runtimeRequestTimeoutMs,
    },
    setup.criFlags ?? {},
  );
  kernel.use(
    runtime,
    runtimeConfig,
    entry ? (entry.spec.configOrigin ?? entry.spec.origin) : `${setup.pluginsOrigin}.${runtimeName}`,
  );
  for (const { plugin, spec } of others) kernel.use(plugin, spec.config, spec.configOrigin ?? spec.origin);
  kernel.use(kubeletPlugin, setup.kubelet, 'kubelet configuration');
  for (const name of Object.keys(setup.plugins)) {
    if (name !== runtimeName) {
      logger.warn(`${setup.pluginsOrigin}.${name} configures a plugin that is not loaded; ignoring it`, {
        loaded: [runtimeName, kubeletPlugin.manifest.name].join(','),
      });
    }
  }
  return kernel;
}

/**
 * `nodelet kubelet`: resolves the configuration, starts the kernel and runs until a signal stops it.
 * Resolves once started; `onStopped` is called (default: exit 0) after a signal stopped it.
 */
export async function runKubelet(
  args: readonly string[],
  io: { stdout: (text: string) => void; onStopped?: (signal: string) => void },
): Promise<Kernel | undefined> {
  const { help, flags } = parseKubeletArgs(args);
  if (help) {
    io.stdout(kubeletHelp);
    return undefined;
  }
  const [{ createLogger }, { hostEnv, resolveKubeletSetup }, { KubeletServerCapability }] = await Promise.all(
    [import('@nodelet/kernel'), import('./kubelet-setup.js'), import('@nodelet/kubelet')],
  );
  const logger = createLogger({ level: logLevelFor(flags.v) });
  const setup = resolveKubeletSetup(flags, hostEnv(logger));
  const kernel = await buildKernel(setup, logger);
  await kernel.start();
  kernel.stopOnSignals(io.onStopped ?? (() => process.exit(0)));
  if (!setup.kubelet.podManifestPath && !setup.kubelet.manifestUrl && !setup.kubelet.apiServer) {
    logger.warn(
      'no pod source configured; give --pod-manifest-path, --manifest-url or --kubeconfig (or staticPodPath in --config)',
    );
  }
  const k = setup.kubelet;
  logger.info('nodelet kubelet running', {
    node: k.nodeName,
    runtime: setup.runtime.name,
    hostIP: k.hostIP,
    ...(k.apiServer ? { kubeconfig: k.apiServer.kubeconfig ?? '' } : {}),
    readOnly: k.readOnlyPort > 0 ? `${k.address}:${k.readOnlyPort}` : 'disabled',
    port:
      k.server && k.server.enableServer !== false
        ? `${k.address}:${kernel.get(KubeletServerCapability).securePort()}`
        : 'disabled',
    ...(setup.config ? { config: setup.config.path } : {}),
  });
  return kernel;
}
