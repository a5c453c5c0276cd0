import { join } from 'node:path';
import type { Kernel, Logger } from '@nodelet/kernel';
import { CliError } from './errors.js';
import type { ProxySetup } from './proxy-command.js';
import { parseUpArgs, type UpFlags, upHelp } from './up-flags.js';

/**
 * `nodelet up`: starts the control plane as a kernel plugin, then `--nodes` kubelets (one kernel each:
 * its runtime plugin and the kubelet) that join it with node kubeconfigs it issues, and serves their
 * container logs to `kubectl logs`. Runs until a signal stops it. Resolves once everything serves;
 * `onStopped` is called (default: exit 0) after a signal stopped it.
 */
export async function runUp(
  args: readonly string[],
  io: { stdout: (text: string) => void; onStopped?: (signal: string) => void },
): Promise<Kernel | undefined> {
  const { help, flags } = parseUpArgs(args);
  if (help) {
    io.stdout(upHelp);
    return undefined;
  }
  const [
    { Kernel, createLogger },
    { controlPlanePlugin, ControlPlaneApi, writeSecret, privateNodeDirs },
    { KubeletServerCapability },
  ] = await Promise.all([
    import('@nodelet/kernel'),
    import('@nodelet/controlplane'),
    import('@nodelet/kubelet'),
  ]);
  const [{ hostEnv, resolveKubeletSetup }, { buildKernel }] = await Promise.all([
    import('./kubelet-setup.js'),
    import('./kubelet-command.js'),
  ]);
  const logger = createLogger({ level: flags.v >= 2 ? 'debug' : 'info' });
  const env = hostEnv(logger);
  const host = flags.hostnameOverride ?? (env.hostname.trim().toLowerCase() || 'nodelet');
  const nodeNames = Array.from({ length: flags.nodes }, (_, i) =>
    flags.nodes === 1 ? host : `${host}-${i + 1}`,
  );
  // The proxy's configuration is checked before anything starts.
  const proxySetup = await resolveUpProxy(flags, nodeNames[0]!, logger);
  const kernel = new Kernel({ logger });
  kernel.use(
    controlPlanePlugin,
    {
      dataDir: flags.dataDir,
      port: flags.port,
      bindAddress: flags.address,
      ...(flags.clusterCidr ? { clusterCidr: flags.clusterCidr } : {}),
      ...(flags.tokenAuthFile ? { tokenAuthFile: flags.tokenAuthFile } : {}),
      ...(flags.authorizationModes ? { authorizationModes: flags.authorizationModes } : {}),
      ...(flags.encryptionProviderConfig ? { encryptionProviderConfig: flags.encryptionProviderConfig } : {}),
      ...(flags.auditLogPath ? { auditLogPath: flags.auditLogPath } : {}),
      ...(flags.auditPolicyFile ? { auditPolicyFile: flags.auditPolicyFile } : {}),
      ...(flags.requestTimeoutMs !== undefined ? { requestTimeoutMs: flags.requestTimeoutMs } : {}),
      ...(flags.maxRequestsInflight !== undefined ? { maxRequestsInflight: flags.maxRequestsInflight } : {}),
      ...(flags.maxMutatingRequestsInflight !== undefined
        ? { maxMutatingRequestsInflight: flags.maxMutatingRequestsInflight }
        : {}),
      ...flags.controlPlaneLoops,
    },
    'nodelet up flags',
  );
  await kernel.start();
  const cp = kernel.get(ControlPlaneApi);

  const stops: (() => Promise<void>)[] = [];
  const stopAll = async () => {
    for (const stop of stops.splice(0).reverse()) {
      try {
        await stop();
      } catch (err) {
        logger.error('stopping failed', { err: String(err) });
      }
    }
  };
  stops.push(() => kernel.stop());
  let proxyLine = 'proxy: none\n';
  let kubeletLines = '';
  let userLines = '';
  try {
    for (const { name, clusterRole } of flags.users) {
      cp.bindUser(name, clusterRole);
      userLines += `kubeconfig for ${name} (ClusterRole ${clusterRole}): ${await cp.userKubeconfig(name)}\n`;
    }
    for (const name of nodeNames) {
      const nodeDir = join(flags.dataDir, 'nodes', name);
      const setup = resolveKubeletSetup(
        {
          hostnameOverride: name,
          kubeconfig: await cp.nodeKubeconfig(name),
          ...(flags.config !== undefined ? { config: flags.config } : {}),
          runtime: flags.runtime,
          rootDir: join(nodeDir, 'kubelet'),
          readOnlyPort: 0,
          // As a cluster's kubelet: on every address (the API server dials the node's InternalIP),
          // authenticated and authorized below.
          address: '0.0.0.0',
        },
        env,
      );
      setup.kubelet.podLogsDir = join(nodeDir, 'pods');
      // The kubelet API as a cluster's kubelet serves it: the cluster CA's certificates and the API
      // server's TokenReviews authenticate, SubjectAccessReviews authorize; a free port each.
      const clientCAFile = join(nodeDir, 'client-ca.crt');
      await writeSecret(clientCAFile, cp.caCert);
      await privateNodeDirs(flags.dataDir, nodeDir, logger);
      setup.kubelet.server = {
        port: 0,
        certDir: join(nodeDir, 'kubelet', 'pki'),
        authentication: {
          x509: { clientCAFile },
          webhook: { enabled: true, cacheTTLMs: 120_000 },
          anonymous: { enabled: false },
        },
        authorization: {
          mode: 'Webhook',
          webhook: { cacheAuthorizedTTLMs: 300_000, cacheUnauthorizedTTLMs: 30_000 },
        },
      };
      // Simulated containers write their (scripted) output to real CRI log files, so kubectl logs works.
      if (flags.runtime === 'fake')
        setup.plugins['runtime-fake'] = { writeLogs: true, ...setup.plugins['runtime-fake'] };
      const nodeKernel = await buildKernel(setup, logger.child(name));
      await nodeKernel.start();
      stops.push(() => nodeKernel.stop());
      // kubectl logs, exec, port-forward, top: the API server dials the port the Node publishes, as
      // upstream, with its client certificate (kube-apiserver's --kubelet-client-certificate).
      const port = nodeKernel.get(KubeletServerCapability).securePort()!;
      kubeletLines += `kubelet ${name}: https://127.0.0.1:${port}\n`;
    }
    if (proxySetup) {
      // kube-proxy's identity, which the bootstrap policy binds to system:node-proxier: it reads
      // Services, EndpointSlices and Nodes and writes Events, nothing else.
      proxySetup.api = { kubeconfig: await cp.userKubeconfig('system:kube-proxy') };
      const proxyLogger = logger.child('proxy');
      const { buildProxyKernel, cleanupModes } = await import('./proxy-kernel.js');
      if (env.isRoot) await cleanupModes(proxyLogger.child('cleanup'), proxySetup.mode);
      const proxyKernel = await buildProxyKernel(proxySetup, proxyLogger);
      await proxyKernel.start();
      // Stopping leaves the rules in force, as upstream: pods stay reachable across a restart.
      stops.push(() => proxyKernel.stop());
      const { ProxyCapability } = await import('@nodelet/proxy');
      const healthz = proxyKernel.get(ProxyCapability).healthzAddress;
      proxyLine =
        `proxy: ${proxySetup.mode} mode${proxySetup.modeReason ? ` (${proxySetup.modeReason})` : ''}, node ${nodeNames[0]}` +
        (healthz ? `, healthz http://${healthz.address}:${healthz.port}/healthz` : '') +
        '\n';
    }
  } catch (err) {
    await stopAll();
    throw err;
  }
  const onStopped = io.onStopped ?? (() => process.exit(0));
  const onSignal = (signal: NodeJS.Signals) => {
    logger.info('received signal; stopping', { signal });
    void stopAll().then(() => onStopped(signal));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  io.stdout(
    `nodelet control plane is serving at ${cp.url} with ${flags.nodes} node${flags.nodes === 1 ? '' : 's'} (${flags.runtime} runtime)\n` +
      proxyLine +
      kubeletLines +
      `kubeconfig: ${cp.kubeconfigPath}\n` +
      userLines +
      `kubelet client certificate: ${join(flags.dataDir, 'pki', 'admin.crt')} (and admin.key; nodelet logs --server <kubelet> --client-certificate … --client-key …)\n` +
      `try: kubectl --kubeconfig ${cp.kubeconfigPath} get nodes\n`,
  );
  return kernel;
}

/**
 * The proxy of `nodelet up`: `--proxy-mode` over the `proxy:` section of `--config`, for the first node;
 * undefined for mode `none`. Its source is always the embedded API server.
 */
async function resolveUpProxy(
  flags: UpFlags,
  nodeName: string,
  logger: Logger,
): Promise<ProxySetup | undefined> {
  const [{ resolveProxySetup }, { backendPlugin }] = await Promise.all([
    import('./proxy-command.js'),
    import('./proxy-kernel.js'),
  ]);
  const setup = await resolveProxySetup(
    {
      help: false,
      cleanup: false,
      values: {
        ...(flags.proxyMode !== undefined ? { mode: flags.proxyMode } : {}),
        ...(flags.config !== undefined ? { config: flags.config } : {}),
        'hostname-override': nodeName,
      },
    },
    logger,
    // Several clusters may run on one host (tests do): /healthz on a free port unless configured.
    {
      modeFlag: '--proxy-mode',
      allowNone: true,
      healthzBindAddress: '127.0.0.1:0',
      metricsBindAddress: '127.0.0.1:0',
    },
  );
  if (setup.mode === 'none') return undefined;
  // A mode that names a plugin package is loaded now, so a typo fails before anything starts.
  await backendPlugin(setup);
  if (setup.proxy.services || setup.api) {
    throw new CliError(
      `${flags.config}: nodelet up proxies the Services of its own API server; remove proxy.services, proxy.kubeconfig and proxy.master`,
    );
  }
  return setup;
}
