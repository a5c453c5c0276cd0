// The streaming path against a real containerd: CRI Exec/PortForward answer with a URL on
// containerd's streaming server (Go, moby/spdystream); the kubelet's upgrade handlers carry a kubectl
// client there — proxied bytes for SPDY, translated for WebSocket v5. Without containerd: skipped
// with one line, or failed when CI=true.
import test from 'ava';
import { request } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { PassThrough, Writable } from 'node:stream';
import { ReplaySubject } from 'rxjs';
import WebSocket from 'ws';
import {
  ContainerConfig,
  ContainerState,
  createCriClient,
  NamespaceMode,
  PodSandboxConfig,
} from '@nodelet/cri';
import { BUSYBOX_IMAGE, removePod, waitFor } from '@nodelet/cri/testing';
import { requireContainerd } from '@nodelet/runtime-cri/testing';
import {
  Channel,
  handleExecUpgrade,
  handlePortForwardUpgrade,
  spdyExecClient,
  spdyPortForwardClient,
} from '@nodelet/streaming';
import http from 'node:http';

const containerd = await requireContainerd(test);

function collect(): { stream: Writable; text: () => string } {
  const chunks: Buffer[] = [];
  return {
    stream: new Writable({
      write(c: Buffer, _e, cb) {
        chunks.push(c);
        cb();
      },
    }),
    text: () => Buffer.concat(chunks).toString(),
  };
}

/** A kubelet-shaped front: every upgrade goes to the URL `target()` gets from CRI for that request. */
async function front(route: (req: http.IncomingMessage) => Promise<string>, kind: 'exec' | 'portforward') {
  const server = http.createServer((_q, r) => r.writeHead(404).end());
  server.on('upgrade', (req, socket, head) => {
    route(req).then(
      (url) =>
        kind === 'exec'
          ? handleExecUpgrade(req, socket, head, { url })
          : handlePortForwardUpgrade(req, socket, head, { url }),
      () => socket.destroy(),
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, base: `127.0.0.1:${(server.address() as AddressInfo).port}` };
}

if (containerd) {
  test.serial('exec and port-forward through containerd streaming URLs', async (t) => {
    const client = createCriClient(containerd.endpoint);
    const uid = `streaming-${process.pid}`;
    const config = PodSandboxConfig.fromPartial({
      metadata: { name: 'streaming', namespace: 'streaming-test', uid, attempt: 0 },
      hostname: 'streaming',
      labels: { 'io.kubernetes.pod.uid': uid },
      linux: { securityContext: { namespaceOptions: { network: NamespaceMode.POD } } },
    });
    const { podSandboxId } = await client.runtime.runPodSandbox({ config, runtimeHandler: '' });
    // One teardown, in order: the pod goes first, then the connection it needs.
    t.teardown(async () => {
      await removePod(client.runtime, podSandboxId).catch(() => undefined);
      client.close();
    });
    const { containerId: id } = await client.runtime.createContainer({
      podSandboxId,
      sandboxConfig: config,
      config: ContainerConfig.fromPartial({
        metadata: { name: 'web', attempt: 0 },
        image: { image: BUSYBOX_IMAGE },
        command: ['sh', '-c', 'echo page-of-streaming-pod > /tmp/index.html; exec httpd -f -p 8080 -h /tmp'],
      }),
    });
    await client.runtime.startContainer({ containerId: id });
    await waitFor(
      'the web container to run',
      async () =>
        (await client.runtime.containerStatus({ containerId: id, verbose: false })).status?.state ===
        ContainerState.CONTAINER_RUNNING,
      15_000,
    );
    const execUrl = async (q: URLSearchParams) =>
      (
        await client.runtime.exec({
          containerId: id,
          cmd: q.getAll('command'),
          tty: q.get('tty') === '1',
          stdin: q.get('stdin') === '1',
          stdout: q.get('stdout') === '1',
          stderr: q.get('stderr') === '1' && q.get('tty') !== '1',
        })
      ).url;
    const exec = await front((req) => execUrl(new URL(req.url!, 'http://x').searchParams), 'exec');
    t.teardown(() => exec.server.close());

    // SPDY from the client: bytes proxied to containerd's server.
    const spdy = async (command: string[], stdin?: string) => {
      const q = new URLSearchParams(command.map((c): [string, string] => ['command', c]));
      q.set('stdout', '1');
      q.set('stderr', '1');
      if (stdin !== undefined) q.set('stdin', '1');
      const out = collect();
      const input = stdin === undefined ? undefined : new PassThrough();
      const run = spdyExecClient(`http://${exec.base}/exec/ns/streaming/web?${q}`).exec(
        { stdin: input, stdout: out.stream, stderr: out.stream },
        { command, stdin: !!input, stdout: true, stderr: true, tty: false, resize$: new ReplaySubject() },
      );
      input?.end(stdin);
      return { exitCode: await run, output: out.text() };
    };
    t.deepEqual(await spdy(['echo', 'hi']), { exitCode: 0, output: 'hi\n' });
    t.deepEqual(await spdy(['sh', '-c', 'echo err >&2; exit 3']), { exitCode: 3, output: 'err\n' });
    t.is((await spdy(['cat'], 'typed\n')).output, 'typed\n');

    // WebSocket v5 from the client (kubectl 1.30+): translated to SPDY towards containerd.
    const ws = await new Promise<{ stdout: string; status: string }>((resolve, reject) => {
      const socket = new WebSocket(
        `ws://${exec.base}/exec/ns/streaming/web?command=sh&command=-c&command=echo%20hi%3B%20exit%203&stdout=1&stderr=1`,
        ['v5.channel.k8s.io'],
      );
      const channels = new Map<number, string>();
      socket.on('message', (d: Buffer) =>
        channels.set(d[0]!, (channels.get(d[0]!) ?? '') + d.subarray(1).toString()),
      );
      socket.on('close', () =>
        resolve({ stdout: channels.get(Channel.stdout) ?? '', status: channels.get(Channel.error) ?? '' }),
      );
      socket.on('error', reject);
    });
    t.is(ws.stdout, 'hi\n');
    t.like(JSON.parse(ws.status), {
      status: 'Failure',
      reason: 'NonZeroExitCode',
      details: { causes: [{ reason: 'ExitCode', message: '3' }] },
    });

    // Port-forward: SPDY streams proxied to containerd, which connects inside the pod's netns.
    const pf = await front(
      async () => (await client.runtime.portForward({ podSandboxId, port: [8080] })).url,
      'portforward',
    );
    t.teardown(() => pf.server.close());
    const forwarder = spdyPortForwardClient(`http://${pf.base}/portForward/ns/streaming`);
    t.teardown(() => forwarder.close());
    // A local listener like kubectl's 127.0.0.1:<port>, each connection forwarded to the pod's 8080.
    const local = net.createServer((conn) => void forwarder.forward(8080, conn).catch(() => conn.destroy()));
    await new Promise<void>((r) => local.listen(0, '127.0.0.1', r));
    t.teardown(() => local.close());
    const page = await new Promise<string>((resolve, reject) => {
      request(
        { host: '127.0.0.1', port: (local.address() as AddressInfo).port, path: '/index.html' },
        (res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString()));
          res.on('end', () => resolve(body));
        },
      )
        .on('error', reject)
        .end();
    });
    t.is(page, 'page-of-streaming-pod\n');
  });
}
