import { readFileSync } from 'node:fs';
import { CliError } from './errors.js';

export const rootHelp = `nodelet: Kubernetes node components in TypeScript.

Usage:
  nodelet <command> [flags]

Commands:
  kubelet      run the kubelet (node agent): static pods from a directory or URL on a container runtime
  proxy        run the proxy (kube-proxy): Services to iptables, nftables, IPVS or userspace rules
  up           run a single-node cluster: the embedded control plane (API server on SQLite) kubectl talks to
  get pods     list the pods a running kubelet reports, like kubectl get pods
  describe pod show a pod's containers, probes, conditions and last events, like kubectl describe pod
  logs         print a container's logs (-c CONTAINER, --previous, -f), like kubectl logs
  cri serve    serve the fake runtime (or another runtime plugin) as a CRI v1 gRPC server
  version      print the version

Flags:
  -h, --help       show this help
      --version    print the version

Run "nodelet <command> --help" for a command's flags.
`;

/** The version of this package, from its package.json. */
export function version(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
      version?: string;
    };
    return pkg.version ?? '0.0.0';
  } catch {
    return '0.0.0';
  }
}

export function versionText(): string {
  return `nodelet v${version()} (node ${process.version}, ${process.platform}/${process.arch})\n`;
}

export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
}

/**
 * Runs a command. Returns the exit code, or `'running'` when a long-running command (the kubelet) is up
 * and the process must stay alive. Throws CliError/ConfigError/… for the caller to print as one line.
 */
export async function run(argv: readonly string[], io: CliIo): Promise<number | 'running'> {
  const [command, ...rest] = argv;
  switch (command) {
    case undefined:
      io.stderr(rootHelp);
      return 1;
    case '-h':
    case '--help':
    case 'help':
      io.stdout(rootHelp);
      return 0;
    case '--version':
    case 'version':
      if (rest.includes('-h') || rest.includes('--help')) {
        io.stdout('Print the nodelet version.\n\nUsage:\n  nodelet version\n');
        return 0;
      }
      io.stdout(versionText());
      return 0;
    case 'kubelet': {
      const { runKubelet } = await import('./kubelet-command.js');
      const kernel = await runKubelet(rest, { stdout: io.stdout });
      return kernel ? 'running' : 0;
    }
    case 'cri': {
      const { runCri } = await import('./cri-command.js');
      return runCri(rest, { stdout: io.stdout });
    }
    case 'proxy': {
      const { runProxy } = await import('./proxy-command.js');
      const kernel = await runProxy(rest, { stdout: io.stdout });
      return kernel ? 'running' : 0;
    }
    case 'up': {
      const { runUp } = await import('./up-command.js');
      const kernel = await runUp(rest, { stdout: io.stdout });
      return kernel ? 'running' : 0;
    }
    case 'get': {
      const { runGet } = await import('./get-command.js');
      return runGet(rest, io);
    }
    case 'describe': {
      const { runDescribe } = await import('./describe-command.js');
      return runDescribe(rest, io);
    }
    case 'logs': {
      const { runLogs } = await import('./logs-command.js');
      return runLogs(rest, io);
    }
    default:
      if (command.startsWith('-'))
        throw new CliError(`unknown flag ${command.split('=')[0]}; see nodelet --help`);
      throw new CliError(`unknown command ${JSON.stringify(command)}; see nodelet --help`);
  }
}
