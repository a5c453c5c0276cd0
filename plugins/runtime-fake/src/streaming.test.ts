import test from 'ava';
import { request } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { ReplaySubject } from 'rxjs';
import WebSocket from 'ws';
import { Channel, spdyExecClient, spdyPortForwardClient } from '@nodelet/streaming';
import { createContainer, runPod, setup, startContainer } from './fixtures.js';

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

test('Exec returns a streaming URL where the simulated command table runs (SPDY and WebSocket v5)', async (t) => {
  const { runtime } = setup();
  t.teardown(() => runtime.close());
  const pod = await runPod(runtime, 'web');
  const id = await startContainer(runtime, pod, 'app');
  const command = ['sh', '-c', 'echo out; echo err >&2; exit 3'];
  const { url } = await runtime.exec({
    containerId: id,
    cmd: command,
    tty: false,
    stdin: false,
    stdout: true,
    stderr: true,
  });
  t.regex(url, /^http:\/\/127\.0\.0\.1:\d+\/exec\/[\w-]+$/);
  const out = collect();
  const err = collect();
  const exitCode = await spdyExecClient(
    `${url}?${new URLSearchParams(command.map((c): [string, string] => ['command', c]))}&stdout=1&stderr=1`,
  ).exec(
    { stdout: out.stream, stderr: err.stream },
    { command, stdin: false, stdout: true, stderr: true, tty: false, resize$: new ReplaySubject() },
  );
  t.deepEqual(
    { exitCode, stdout: out.text(), stderr: err.text() },
    { exitCode: 3, stdout: 'out\n', stderr: 'err\n' },
  );

  // The token is single-use, as a runtime's are.
  await t.throwsAsync(
    spdyExecClient(`${url}?command=true&stdout=1`).exec(
      {},
      {
        command: ['true'],
        stdin: false,
        stdout: true,
        stderr: false,
        tty: false,
        resize$: new ReplaySubject(),
      },
    ),
    { message: /HTTP 404: unknown or used streaming token/ },
  );

  const cat = await runtime.exec({
    containerId: id,
    cmd: ['cat'],
    tty: false,
    stdin: true,
    stdout: true,
    stderr: false,
  });
  const typed = await new Promise<string>((resolve, reject) => {
    const ws = new WebSocket(`${cat.url.replace('http', 'ws')}?command=cat&stdin=1&stdout=1`, [
      'v5.channel.k8s.io',
    ]);
    let stdout = '';
    ws.on('open', () => {
      ws.send(Buffer.from('\x00typed'));
      ws.send(Buffer.from([Channel.close, Channel.stdin]));
    });
    ws.on('message', (d: Buffer) => {
      if (d[0] === Channel.stdout) stdout += d.subarray(1).toString();
    });
    ws.on('close', () => resolve(stdout));
    ws.on('error', reject);
  });
  t.is(typed, 'typed');
});

test('PortForward reaches the per-pod echo: bytes come back, an HTTP GET gets a page naming the pod', async (t) => {
  const { runtime } = setup();
  t.teardown(() => runtime.close());
  const pod = await runPod(runtime, 'web');
  const { url } = await runtime.portForward({ podSandboxId: pod, port: [8080] });
  const forwarder = spdyPortForwardClient(url);
  t.teardown(() => forwarder.close());
  const local = net.createServer((conn) => void forwarder.forward(8080, conn).catch(() => conn.destroy()));
  await new Promise<void>((r) => local.listen(0, '127.0.0.1', r));
  t.teardown(() => local.close());
  const port = (local.address() as AddressInfo).port;

  const page = await new Promise<string>((resolve, reject) => {
    request({ host: '127.0.0.1', port, path: '/' }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve(body));
    })
      .on('error', reject)
      .end();
  });
  t.regex(page, /pod default\/web, port 8080/);

  const echoed = await new Promise<string>((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write('ping\n'));
    socket.on('data', (d: Buffer) => {
      resolve(d.toString());
      socket.destroy();
    });
    socket.on('error', reject);
  });
  t.is(echoed, 'ping\n');
});

test('Exec of a container that is not running is FailedPrecondition, of an unknown one NotFound', async (t) => {
  const { runtime } = setup();
  t.teardown(() => runtime.close());
  const pod = await runPod(runtime, 'web');
  const created = await createContainer(runtime, pod, 'app');
  await t.throwsAsync(
    runtime.exec({
      containerId: created,
      cmd: ['true'],
      tty: false,
      stdin: false,
      stdout: true,
      stderr: false,
    }),
    {
      message: /is not running \(CONTAINER_CREATED\)/,
    },
  );
  await t.throwsAsync(
    runtime.exec({
      containerId: 'nope',
      cmd: ['true'],
      tty: false,
      stdin: false,
      stdout: true,
      stderr: false,
    }),
    {
      message: /not found/,
    },
  );
});
