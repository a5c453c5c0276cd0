import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Kernel } from '@nodelet/kernel';
import { intFlag, parseFlags } from './args.js';
import { CliError } from './errors.js';

// Flags and help load nothing heavy; the kernel and the control plane are imported only to run.

export const upHelp = `Run a single-node Kubernetes cluster: the embedded control plane (API server on SQLite, scheduler,
EndpointSlice controller) that kubectl and @kubernetes/client-node talk to over HTTPS.

Usage:
  nodelet up [flags]

Flags:
  --data-dir DIR      state: state.db (SQLite), pki/ (CA and certificates), kubeconfig (default ~/.nodelet)
  --port PORT         HTTPS port of the API server; 0 picks a free one (default 6443)
  --address IP        address the API server binds to (default 127.0.0.1)
  --runtime NAME      container runtime of the node: fake | containerd (default fake)
  --nodes N           simulated nodes on the fake runtime (default 1)
  --v N               log verbosity: 0-1 info, 2 and up debug (default 0)
  -h, --help          show this help

The admin kubeconfig is written to <data-dir>/kubeconfig. Objects survive a restart with the same
--data-dir. Stop it with SIGINT or SIGTERM.

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
  v: { type: 'string', short: 'v' },
  help: { type: 'boolean', short: 'h' },
} as const;

export interface UpFlags {
  dataDir: string;
  port: number;
  address: string;
  runtime: 'fake' | 'containerd';
  nodes: number;
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
    throw new CliError('flag --nodes simulates nodes on the fake runtime; with --runtime containerd there is one node');
  }
  return {
    help: !!values.help,
    flags: {
      dataDir: resolve(values['data-dir'] ?? join(homedir(), '.nodelet')),
      port: intFlag('port', values.port, 0, 65535) ?? 6443,
      address: values.address ?? '127.0.0.1',
      runtime,
      nodes,
      v: intFlag('v', values.v?.replace(/^=/, ''), 0, 10) ?? 0,
    },
  };
}

/**
 * `nodelet up`: starts the control plane as a kernel plugin and runs until a signal stops it. Resolves
 * once it serves; `onStopped` is called (default: exit 0) after a signal stopped it.
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
  const [{ Kernel, createLogger }, { controlPlanePlugin, ControlPlaneApi }] = await Promise.all([
    import('@nodelet/kernel'),
    import('@nodelet/controlplane'),
  ]);
  const logger = createLogger({ level: flags.v >= 2 ? 'debug' : 'info' });
  const kernel = new Kernel({ logger });
  kernel.use(controlPlanePlugin, { dataDir: flags.dataDir, port: flags.port, bindAddress: flags.address }, 'nodelet up flags');
  await kernel.start();
  kernel.stopOnSignals(io.onStopped ?? (() => process.exit(0)));
  const cp = kernel.get(ControlPlaneApi);
  // The kubelet joins the API server (API pod source, node registration, status) in the next issue;
  // until then no node registers and pods stay Pending.
  logger.warn('no kubelet joins this control plane yet: no node registers, pods stay Pending', {
    runtime: flags.runtime,
    nodes: flags.nodes,
  });
  io.stdout(
    `nodelet control plane is serving at ${cp.url}\n` +
      `kubeconfig: ${cp.kubeconfigPath}\n` +
      `try: kubectl --kubeconfig ${cp.kubeconfigPath} get nodes\n`,
  );
  return kernel;
}
