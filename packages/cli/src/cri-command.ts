import { rm, stat } from 'node:fs/promises';
import type { Logger } from '@nodelet/kernel';
import { parseFlags, intFlag } from './args.js';
import { CliError } from './errors.js';

// Flags and help load nothing heavy; the kernel, the runtime and gRPC are imported only to serve.

export const criHelp = `Work with the Container Runtime Interface (CRI v1).

Usage:
  nodelet cri serve --listen ADDRESS [flags]

Commands:
  serve    serve a runtime plugin (default: the fake runtime) as a CRI v1 server, for crictl, a
           kubelet, or tests; runs until SIGINT or SIGTERM

Flags of serve:
  --listen ADDRESS     unix:///path/to/cri.sock (or an absolute path), or 127.0.0.1:PORT (0: any
                       free port); required
  --runtime NAME       fake | containerd | crio | an npm package or path exporting a plugin
                       (default fake)
  --config FILE        a NodeletConfiguration whose plugins.<name> section configures the runtime
                       (e.g. plugins.runtime-fake.missingImages)
  --v N                log verbosity: 0-1 info, 2 and up debug (default 0)
  -h, --help           show this help

It prints "serving CRI v1 (runtime NAME) on ADDRESS" once it accepts calls. The pod IPs the fake
runtime hands out are simulated (no host has them): a CRI client must not send traffic to them.

Examples:
  nodelet cri serve --listen unix:///tmp/nodelet-cri.sock
  crictl --runtime-endpoint unix:///tmp/nodelet-cri.sock ps
`;

const options = {
  listen: { type: 'string' },
  runtime: { type: 'string' },
  config: { type: 'string' },
  v: { type: 'string', short: 'v' },
  help: { type: 'boolean', short: 'h' },
} as const;

const ADDRESS =
  /^(?:unix:\/\/\/\S+|unix:\/[^/\s]\S*|\/\S+|[A-Za-z0-9.-]+:\d{1,5}|\[[0-9A-Fa-f:.]+\]:\d{1,5})$/;

export interface CriIo {
  stdout: (text: string) => void;
  /** Called once a signal stopped the server (default: exit 0). */
  onStopped?: (signal: string) => void;
}

/** `nodelet cri …`. Resolves 'running' while `serve` serves, or an exit code. */
export async function runCri(args: readonly string[], io: CriIo): Promise<number | 'running'> {
  const [sub, ...rest] = args;
  if (sub === undefined || sub === '-h' || sub === '--help' || sub === 'help') {
    io.stdout(criHelp);
    return sub === undefined ? 1 : 0;
  }
  if (sub !== 'serve') {
    throw new CliError(`unknown cri command ${JSON.stringify(sub)}; see nodelet cri --help`);
  }
  const { values, positionals } = parseFlags(rest, options, 'nodelet cri serve');
  if (values.help) {
    io.stdout(criHelp);
    return 0;
  }
  if (positionals.length > 0) {
    throw new CliError(`unexpected argument ${JSON.stringify(positionals[0])}; see nodelet cri --help`);
  }
  const listen = values.listen;
  if (!listen) throw new CliError('flag --listen is required (unix:///path/cri.sock or 127.0.0.1:PORT)');
  if (!ADDRESS.test(listen)) {
    throw new CliError(
      `flag --listen must be unix:///absolute/path.sock or HOST:PORT, got ${JSON.stringify(listen)}`,
    );
  }
  const v = intFlag('v', values.v?.replace(/^=/, ''), 0, 10);
  await serve(listen, values.runtime ?? 'fake', values.config, v, io);
  return 'running';
}

async function serve(
  listen: string,
  runtimeName: string,
  configFile: string | undefined,
  v: number | undefined,
  io: CriIo,
): Promise<void> {
  const [{ Kernel, createLogger, errorMessage }, { CriImage, CriRuntime, serveCri, unixSocketPath }] =
    await Promise.all([import('@nodelet/kernel'), import('@nodelet/cri')]);
  const [{ loadRuntime, pluginSection }, { loadConfigFile }] = await Promise.all([
    import('./plugins.js'),
    import('./nodelet-config.js'),
  ]);
  const logger: Logger = createLogger({ level: (v ?? 0) >= 2 ? 'debug' : 'info' });
  const config = configFile ? loadConfigFile(configFile, logger) : undefined;
  const plugin = await loadRuntime({
    name: runtimeName,
    origin: 'flag --runtime',
    baseDir: process.cwd(),
  });
  const name = plugin.manifest.name;
  const section = pluginSection(config, name);
  const kernel = new Kernel({ logger }).use(plugin, section.config, section.origin);
  await kernel.start();
  let server: Awaited<ReturnType<typeof serveCri>>;
  try {
    server = await serveCri(kernel.get(CriRuntime), kernel.get(CriImage), listen);
  } catch (err) {
    await kernel.stop();
    throw new CliError(`flag --listen: ${errorMessage(err)}`);
  }
  const socket = unixSocketPath(listen);

  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.info('received signal; stopping the CRI server', { signal });
    void (async () => {
      await server.stop(2000);
      await kernel.stop();
      // grpc-js leaves the socket file behind: remove it, so the next serve starts clean.
      if (socket && (await stat(socket).catch(() => undefined))?.isSocket())
        await rm(socket, { force: true });
      (io.onStopped ?? (() => process.exit(0)))(signal);
    })();
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  logger.info('serving CRI v1', { runtime: name, address: server.address });
  // The fake runtime's pod IPs (10.244.0.0/16 unless podCIDR says otherwise) belong to no host; a CRI
  // client (a kubelet probing pods, say) must not send to them: they would be routed off the machine.
  const simulated =
    name === 'runtime-fake' ? '; its pod IPs are simulated and reach no host: send nothing to them' : '';
  io.stdout(`serving CRI v1 (runtime ${name}${simulated}) on ${server.address}\n`);
}
