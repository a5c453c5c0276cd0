// Test support (not part of the package's API): a scripted RemoteCommandHandler and WebSocket client.
import { firstValueFrom } from 'rxjs';
import WebSocket from 'ws';
import type { ExecOptions, ExecStreams, RemoteCommandHandler } from './remotecommand/handler.js';

function write(stream: NodeJS.WritableStream | undefined, text: string): Promise<void> {
  return new Promise((resolve) => (stream ? stream.write(text, () => resolve()) : resolve()));
}

export const scriptedHandler: RemoteCommandHandler = {
  async exec(streams: ExecStreams, options: ExecOptions): Promise<number> {
    const [cmd, ...args] = options.command;
    switch (cmd) {
      case 'echo':
        await write(streams.stdout, `${args.join(' ')}\n`);
        return 0;
      case 'fail':
        await write(streams.stderr, 'oops\n');
        return Number(args[0] ?? 1);
      case 'cat':
        for await (const chunk of streams.stdin!) await write(streams.stdout, String(chunk));
        return 0;
      case 'size': {
        const size = await firstValueFrom(options.resize$);
        await write(streams.stdout, `${size.width}x${size.height}\n`);
        return 0;
      }
      default:
        throw new Error(`executable file not found in $PATH: ${cmd}`);
    }
  },
};

export interface ChannelCapture {
  protocol: string;
  channels: Map<number, Buffer>;
  closeCode: number;
}

/** Runs a WebSocket channel session: sends `messages` once open, collects every channel until close. */
export function wsSession(
  url: string,
  protocols: string[],
  messages: (Buffer | ((ws: WebSocket) => void))[] = [],
): Promise<ChannelCapture> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, protocols);
    const channels = new Map<number, Buffer>();
    ws.on('open', () => {
      for (const m of messages) {
        if (typeof m === 'function') m(ws);
        else ws.send(m);
      }
    });
    ws.on('message', (data: Buffer) => {
      const ch = data[0]!;
      channels.set(ch, Buffer.concat([channels.get(ch) ?? Buffer.alloc(0), data.subarray(1)]));
    });
    ws.on('close', (closeCode) => resolve({ protocol: ws.protocol, channels, closeCode }));
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => reject(Object.assign(new Error(body.trim()), { statusCode: res.statusCode })));
    });
    ws.on('error', reject);
  });
}
