import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Kernel } from '@nodelet/kernel';
import { intFlag, parseFlags } from './args.js';
import { CliError } from './errors.js';

// Flags and help load nothing heavy; the kernel and the control plane are imported only to run.

export const upHelp = `Run a Kubernetes cluster in one process: the embedded control plane (API server on SQLite, scheduler,
EndpointSlice controller) that kubectl and @kubernetes/client-node talk to over HTTPS, and a kubelet per
node that joins it.

Usage:
  nodelet up [flags]

Flags:
  --data-dir DIR      state: state.db (SQLite), pki/ (CA and certificates), kubeconfig (default ~/.nodelet)
  --port PORT         HTTPS port of the API server; 0 picks a free one (default 6443)
  --address IP        address the API server binds to (default 127.0.0.1)
  --runtime NAME      container runtime of the node: fake | containerd (default fake)
  --nodes N           simulated nodes on the fake runtime (default 1)
  --hostname-override NAME
                      name of the node, or of nodes NAME-1..NAME-N (default: the hostname)
  --v N               log verbosity: 0-1 info, 2 and up debug (default 0)
  -h, --help          show this help

The admin kubeconfig is written to <data-dir>/kubeconfig; node N's state is under <data-dir>/nodes/<N>.
Objects survive a restart with the same --data-dir. Stop it with SIGINT or SIGTERM.

Examples:
  nodelet up
  kubectl --kubeconfig ~/.nodelet/kubeconfig get nodes
`;

const options = {
  'data-dir': { type: 'string' },
  port: { type: 'string' },
  address: { type: 'string' },
  runtime: { type: 'string' },
  nodes: { type: 'string' },
  'hostname-override': { type: 'string' },
  v: { type: 'string', short: 'v' },
  help: { type: 'boolean', short: 'h' },
} as const;

export interface UpFlags {
  dataDir: string;
  port: number;
  address: string;
  runtime: 'fake' | 'containerd';
  nodes: number;
  hostnameOverride?: string;
  v: number;
}

export function parseUpArgs(args: readonly string[]): { help: boolean; flags: UpFlags } {
  const { values, positionals } = parseFlags(args, options, 'nodelet up');
  if (positionals.length > 0) {
    throw new CliError(`unexpected argument ${JSON.stringify(positionals[0])}; see nodelet up --help`);
  }
  const runtime = values.runtime ?? 'fake';
  if (runtime !== 'fake' && runtime !== 'containerd') {
    throw new CliError(`flag --runtime must be fake or containerd, got ${JSON.stringify(runtime)}`);
  }
  const nodes = intFlag('nodes', values.nodes, 1, 1000) ?? 1;
  if (runtime === 'containerd' && nodes !== 1) {
    throw new CliError(
      'flag --nodes simulates nodes on the fake runtime; with --runtime containerd there is one node',
    );
  }
  const hostnameOverride = values['hostname-override']?.trim().toLowerCase();
  // The name becomes a directory under --data-dir and a certificate subject: a DNS subdomain only.
  if (hostnameOverride !== undefined && !/^[a-z0-9]([-a-z0-9.]{0,240}[a-z0-9])?$/.test(hostnameOverride)) {
    throw new CliError(
      `flag --hostname-override must be a node name (lowercase letters, digits, '-' and '.'), got ${JSON.stringify(values['hostname-override'])}`,
    );
  }
  return {
    help: !!values.help,
    flags: {
      dataDir: resolve(values['data-dir'] ?? join(homedir(), '.nodelet')),
      port: intFlag('port', values.port, 0, 65535) ?? 6443,
      address: values.address ?? '127.0.0.1',
      runtime,
      nodes,
      hostnameOverride,
      v: intFlag('v', values.v?.replace(/^=/, ''), 0, 10) ?? 0,
    },
  };
}

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
    { controlPlanePlugin, ControlPlaneApi },
    { KubeletCapability, ReadOnlyServer },
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
  const kernel = new Kernel({ logger });
  kernel.use(
    controlPlanePlugin,
    { dataDir: flags.dataDir, port: flags.port, bindAddress: flags.address },
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
  try {
    const env = hostEnv(logger);
    const host = flags.hostnameOverride ?? (env.hostname.trim().toLowerCase() || 'nodelet');
    for (let i = 1; i <= flags.nodes; i++) {
      const name = flags.nodes === 1 ? host : `${host}-${i}`;
      const nodeDir = join(flags.dataDir, 'nodes', name);
      const setup = resolveKubeletSetup(
        {
          hostnameOverride: name,
          kubeconfig: await cp.nodeKubeconfig(name),
          runtime: flags.runtime,
          rootDir: join(nodeDir, 'kubelet'),
          readOnlyPort: 0,
        },
        env,
      );
      setup.kubelet.podLogsDir = join(nodeDir, 'pods');
      // Simulated containers write their (scripted) output to real CRI log files, so kubectl logs works.
      if (flags.runtime === 'fake')
        setup.plugins['runtime-fake'] = { writeLogs: true, ...setup.plugins['runtime-fake'] };
      const nodeKernel = await buildKernel(setup, logger.child(name));
      await nodeKernel.start();
      stops.push(() => nodeKernel.stop());
      // kubectl logs: the API server reads the node's container logs from its kubelet, as upstream does.
      const logs = new ReadOnlyServer(nodeKernel.get(KubeletCapability), logger.child(name).child('logs'));
      const address = await logs.listen(0, '127.0.0.1');
      stops.push(() => logs.close());
      const unregister = cp.registerLogProvider(name, kubeletLogs(address.port));
      stops.push(async () => unregister());
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
      `kubeconfig: ${cp.kubeconfigPath}\n` +
      `try: kubectl --kubeconfig ${cp.kubeconfigPath} get nodes\n`,
  );
  return kernel;
}

/** `pods/log` from a kubelet's `/containerLogs` endpoint on 127.0.0.1:`port`. */
function kubeletLogs(port: number) {
  return {
    async logs(
      pod: { metadata: { namespace?: string; name?: string } },
      options: { container: string; follow: boolean; previous: boolean; tailLines?: number },
      signal: AbortSignal,
    ) {
      const { ApiError } = await import('@nodelet/controlplane');
      const { request } = await import('node:http');
      const query = new URLSearchParams();
      if (options.follow) query.set('follow', 'true');
      if (options.previous) query.set('previous', 'true');
      if (options.tailLines !== undefined) query.set('tailLines', String(options.tailLines));
      const path = `/containerLogs/${encodeURIComponent(pod.metadata.namespace ?? '')}/${encodeURIComponent(pod.metadata.name ?? '')}/${encodeURIComponent(options.container)}?${query}`;
      return new Promise<import('node:http').IncomingMessage>((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port, path, signal }, (res) => {
          if (res.statusCode === 200) return resolve(res);
          let text = '';
          res.on('data', (d: Buffer) => (text += d.toString()));
          res.on('end', () => {
            const code = res.statusCode === 404 ? 404 : res.statusCode === 400 ? 400 : 500;
            const reason = code === 404 ? 'NotFound' : code === 400 ? 'BadRequest' : 'InternalError';
            reject(new ApiError(code, reason, text.trim()));
          });
        });
        req.on('error', reject);
        req.end();
      });
    },
  };
}
