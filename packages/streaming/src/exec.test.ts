import test from 'ava';
import { PassThrough, Writable } from 'node:stream';
import { ReplaySubject } from 'rxjs';
import { Channel, type ExecStatus } from './remotecommand/protocol.js';
import { spdyExecClient } from './remotecommand/spdy-client.js';
import { dialSpdy, UpgradeRefusedError } from './spdy/dial.js';
import { scriptedHandler, wsSession } from './test-exec-handler.js';
import { upgradeServer } from './test-servers.js';
import { handleExecUpgrade } from './upgrade.js';

function sink(): { stream: Writable; text: () => string } {
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

const q = (command: string[], flags: string) =>
  `${command.map((c) => `command=${encodeURIComponent(c)}`).join('&')}&${flags}`;

async function runSpdy(
  base: string,
  command: string[],
  { stdin, tty }: { stdin?: string; tty?: boolean } = {},
) {
  const out = sink();
  const err = sink();
  const input = stdin === undefined ? undefined : new PassThrough();
  // kubectl sends the terminal's size as soon as the session is up; replay it to the late subscriber.
  const resize$ = new ReplaySubject<{ width: number; height: number }>(1);
  const flags = `stdout=1&stderr=${tty ? 0 : 1}${input ? '&stdin=1' : ''}${tty ? '&tty=1' : ''}`;
  const run = spdyExecClient(`${base}/exec/ns/pod/c?${q(command, flags)}`).exec(
    { stdin: input, stdout: out.stream, stderr: err.stream },
    { command, stdin: !!input, stdout: true, stderr: !tty, tty: !!tty, resize$ },
  );
  input?.end(stdin);
  if (tty) resize$.next({ width: 80, height: 24 });
  const exitCode = await run;
  return { exitCode, stdout: out.text(), stderr: err.text() };
}

test('SPDY v4: stdout, stderr, stdin and the exit code from the error stream', async (t) => {
  const server = await upgradeServer((req, socket, head) =>
    handleExecUpgrade(req, socket, head, scriptedHandler),
  );
  t.teardown(server.close);
  t.deepEqual(await runSpdy(server.url, ['echo', 'hi']), { exitCode: 0, stdout: 'hi\n', stderr: '' });
  t.deepEqual(await runSpdy(server.url, ['fail', '3']), { exitCode: 3, stdout: '', stderr: 'oops\n' });
  t.is((await runSpdy(server.url, ['cat'], { stdin: 'typed\n' })).stdout, 'typed\n');
  t.is((await runSpdy(server.url, ['size'], { tty: true })).stdout, '80x24\n');
  await t.throwsAsync(runSpdy(server.url, ['nope']), {
    message: /Internal error occurred: executable file not found/,
  });
});

test('SPDY: a client offering only protocols we do not speak gets 403 naming both sides', async (t) => {
  const server = await upgradeServer((req, socket, head) =>
    handleExecUpgrade(req, socket, head, scriptedHandler),
  );
  t.teardown(server.close);
  const err = await t.throwsAsync(
    dialSpdy(`${server.url}/exec/a/b/c?command=x&stdout=1`, ['v9.channel.k8s.io']),
    {
      instanceOf: UpgradeRefusedError,
    },
  );
  t.is(err?.statusCode, 403);
  t.regex(err!.body, /client supports \[v9\.channel\.k8s\.io\], server accepts \[v4\.channel\.k8s\.io/);
});

test('WebSocket v5: channels, the Success/NonZeroExitCode status, close of stdin, resize', async (t) => {
  const server = await upgradeServer((req, socket, head) =>
    handleExecUpgrade(req, socket, head, scriptedHandler),
  );
  t.teardown(server.close);
  const ws = server.url.replace('http', 'ws');
  const echo = await wsSession(`${ws}/exec/a/b/c?${q(['echo', 'hi'], 'stdout=1&stderr=1')}`, [
    'v5.channel.k8s.io',
    'v4.channel.k8s.io',
  ]);
  t.is(echo.protocol, 'v5.channel.k8s.io');
  t.is(echo.channels.get(Channel.stdout)?.toString(), 'hi\n');
  t.deepEqual(JSON.parse(echo.channels.get(Channel.error)!.toString()), { metadata: {}, status: 'Success' });
  t.is(echo.closeCode, 1000);

  const failed = await wsSession(`${ws}/exec/a/b/c?${q(['fail', '3'], 'stdout=1&stderr=1')}`, [
    'v4.channel.k8s.io',
  ]);
  const status = JSON.parse(failed.channels.get(Channel.error)!.toString()) as ExecStatus;
  t.is(status.status, 'Failure');
  t.is(status.reason, 'NonZeroExitCode');
  t.deepEqual(status.details?.causes, [{ reason: 'ExitCode', message: '3' }]);
  t.is(failed.channels.get(Channel.stderr)?.toString(), 'oops\n');

  const cat = await wsSession(
    `${ws}/exec/a/b/c?${q(['cat'], 'stdin=1&stdout=1')}`,
    ['v5.channel.k8s.io'],
    [Buffer.from('\x00abc'), Buffer.from([Channel.close, Channel.stdin])],
  );
  t.is(cat.channels.get(Channel.stdout)?.toString(), 'abc');

  const size = await wsSession(
    `${ws}/exec/a/b/c?${q(['size'], 'stdout=1&tty=1')}`,
    ['v5.channel.k8s.io'],
    [Buffer.concat([Buffer.from([Channel.resize]), Buffer.from('{"Width":132,"Height":43}')])],
  );
  t.is(size.channels.get(Channel.stdout)?.toString(), '132x43\n');
});

test('bad requests are 400 naming the parameter or the missing subprotocol', async (t) => {
  const server = await upgradeServer((req, socket, head) =>
    handleExecUpgrade(req, socket, head, scriptedHandler),
  );
  t.teardown(server.close);
  const ws = server.url.replace('http', 'ws');
  await t.throwsAsync(wsSession(`${ws}/exec/a/b/c?command=x&stdin=maybe`, ['v5.channel.k8s.io']), {
    message: /query parameter stdin="maybe" is not a boolean/,
  });
  await t.throwsAsync(wsSession(`${ws}/exec/a/b/c?stdout=1`, ['v5.channel.k8s.io']), {
    message: /command is required/,
  });
  await t.throwsAsync(wsSession(`${ws}/exec/a/b/c?command=x`, ['v5.channel.k8s.io']), {
    message: /at least 1 of stdin, stdout, stderr/,
  });
  await t.throwsAsync(wsSession(`${ws}/exec/a/b/c?command=x&stdout=1`, ['chat']), {
    message: /no supported WebSocket subprotocol/,
  });
});

test('a { url } target: SPDY clients are proxied byte for byte, WebSocket v5 clients translated to SPDY', async (t) => {
  const runtime = await upgradeServer((req, socket, head) =>
    handleExecUpgrade(req, socket, head, scriptedHandler),
  );
  t.teardown(runtime.close);
  // The runtime's URL carries the command (its token, in a real runtime); the kubelet's query is for the client side.
  const kubelet = await upgradeServer((req, socket, head) =>
    handleExecUpgrade(req, socket, head, {
      url: `${runtime.url}/exec/token?${q(['fail', '4'], 'stdout=1&stderr=1')}`,
    }),
  );
  t.teardown(kubelet.close);
  t.deepEqual(await runSpdy(kubelet.url, ['fail', '4']), { exitCode: 4, stdout: '', stderr: 'oops\n' });
  const ws = await wsSession(
    `${kubelet.url.replace('http', 'ws')}/exec/a/b/c?${q(['fail', '4'], 'stdout=1&stderr=1')}`,
    ['v5.channel.k8s.io'],
  );
  t.is(ws.channels.get(Channel.stderr)?.toString(), 'oops\n');
  t.like(JSON.parse(ws.channels.get(Channel.error)!.toString()), { reason: 'NonZeroExitCode' });
});

test('a { url } target that refuses connections: 502 naming the streaming server', async (t) => {
  const kubelet = await upgradeServer((req, socket, head) =>
    handleExecUpgrade(req, socket, head, { url: 'http://127.0.0.1:1/x' }),
  );
  t.teardown(kubelet.close);
  const err = await t.throwsAsync(
    dialSpdy(`${kubelet.url}/exec/a/b/c?command=x&stdout=1`, ['v4.channel.k8s.io']),
    {
      instanceOf: UpgradeRefusedError,
    },
  );
  t.is(err?.statusCode, 502);
  t.regex(err!.body, /error dialing the runtime's streaming server/);
});
