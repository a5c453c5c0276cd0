/**
 * A SPDY/3.1 session over one socket, as moby/spdystream runs it for kubectl and the kubelet: streams
 * opened by SYN_STREAM (client odd ids, server even), answered by SYN_REPLY, half-closed by FIN,
 * aborted by RST_STREAM; PING echoed; GOAWAY ends it. Every frame in and out passes one ordered queue,
 * because the header zlib contexts are stateful. A protocol error ends the session (GOAWAY, socket
 * destroyed) and is reported on 'error' of the session only if someone listens — never thrown out
 * of a socket handler.
 */
import { EventEmitter } from 'node:events';
import { Duplex } from 'node:stream';
import { encodeFrame, FLAG_FIN, type Frame, FrameParser, RstStatus, SpdyProtocolError } from './frames.js';
import { HeaderCompressor, HeaderDecompressor, type SpdyHeaders } from './header-block.js';

/** The size of the DATA frames we send (half the §2.6.8 default window). */
const MAX_DATA_FRAME = 32 * 1024;

export class SpdyStream extends Duplex {
  /** Headers of the SYN_STREAM (for streams the peer opened) or of the SYN_REPLY (for ours, once replied). */
  headers: SpdyHeaders;
  private replySent = false;
  private readonly replyWaiters: { resolve: (h: SpdyHeaders) => void; reject: (e: Error) => void }[] = [];
  replied = false;

  constructor(
    private readonly session: SpdySession,
    readonly id: number,
    headers: SpdyHeaders,
  ) {
    super({ allowHalfOpen: true });
    this.headers = headers;
  }

  /** Accepts a stream the peer opened (SYN_REPLY). */
  reply(headers: SpdyHeaders = {}): void {
    if (this.replySent) return;
    this.replySent = true;
    this.session.send(
      { type: 'syn_reply', streamId: this.id, flags: 0, headerBlock: Buffer.alloc(0) },
      headers,
    );
  }

  /** Resolves with the peer's SYN_REPLY headers (streams we opened). */
  waitReply(): Promise<SpdyHeaders> {
    if (this.replied) return Promise.resolve(this.headers);
    return new Promise((resolve, reject) => this.replyWaiters.push({ resolve, reject }));
  }

  /** Aborts the stream with RST_STREAM CANCEL. */
  reset(status: number = RstStatus.Cancel): void {
    this.session.send({ type: 'rst_stream', streamId: this.id, status });
    this.destroy();
  }

  override _read(): void {}

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    for (let at = 0; at < chunk.length; at += MAX_DATA_FRAME) {
      this.session.send({
        type: 'data',
        streamId: this.id,
        flags: 0,
        data: chunk.subarray(at, at + MAX_DATA_FRAME),
      });
    }
    this.session.afterQueued(cb);
  }

  override _final(cb: (err?: Error | null) => void): void {
    this.session.send({ type: 'data', streamId: this.id, flags: FLAG_FIN, data: Buffer.alloc(0) });
    this.session.afterQueued(cb);
  }

  override _destroy(err: Error | null, cb: (err: Error | null) => void): void {
    this.session.forget(this.id);
    for (const w of this.replyWaiters.splice(0))
      w.reject(err ?? new Error('spdy: stream closed before its reply'));
    cb(err);
  }

  /** @internal */
  receivedReply(headers: SpdyHeaders): void {
    this.headers = headers;
    this.replied = true;
    for (const w of this.replyWaiters.splice(0)) w.resolve(headers);
  }

  /**
   * @internal data from the peer. No WINDOW_UPDATE goes back: the peers of this protocol (spdystream in
   * kubectl, containerd, CRI-O) neither send nor honour them, and one arriving after such a peer closed
   * made its kernel reset the connection — which dropped output still in flight to us.
   */
  receivedData(data: Buffer, fin: boolean): void {
    if (data.length > 0 && !this.readableEnded) this.push(data);
    if (fin) this.push(null);
  }
}

export interface SpdySessionOptions {
  /** true on the side that accepted the connection (the server opens even stream ids). */
  server: boolean;
}

/** Events: 'stream' (a stream the peer opened), 'close', 'error' (only if listened to). */
export class SpdySession extends EventEmitter<{ stream: [SpdyStream]; close: []; error: [Error] }> {
  private readonly parser = new FrameParser();
  private readonly compressor = new HeaderCompressor();
  private readonly decompressor = new HeaderDecompressor();
  private readonly streams = new Map<number, SpdyStream>();
  private nextId: number;
  private lastPeerId = 0;
  private sendQueue: Promise<void> = Promise.resolve();
  private recvQueue: Promise<void> = Promise.resolve();
  private closed = false;
  private closing = false;

  constructor(
    readonly socket: Duplex,
    private readonly options: SpdySessionOptions,
  ) {
    super();
    this.nextId = options.server ? 2 : 1;
    socket.on('data', (chunk: Buffer) => this.feed(chunk));
    // A reset (the peer closed while our window updates were in flight) is a hang-up too.
    socket.on('error', () => this.peerClosed());
    socket.on('close', () => this.peerClosed());
    socket.on('end', () => this.peerClosed());
  }

  /**
   * The peer hung up: the frames it sent before are still in the receive queue (header blocks are
   * inflated asynchronously), so they are delivered first, and each stream ends — its readers get what
   * it buffered, then EOF — before the session closes. (Closing at once cut a large exec output short.)
   */
  private peerClosed(): void {
    if (this.closed || this.closing) return;
    this.closing = true;
    void this.recvQueue.then(async () => {
      for (const s of this.streams.values()) if (!s.readableEnded) s.push(null);
      await new Promise<void>((resolve) => setImmediate(resolve));
      this.close();
    });
  }

  /** Opens a stream (SYN_STREAM); wait for `waitReply()` before relying on the peer having it. */
  openStream(headers: SpdyHeaders, fin = false): SpdyStream {
    const id = this.nextId;
    this.nextId += 2;
    const stream = new SpdyStream(this, id, headers);
    this.streams.set(id, stream);
    this.send(
      {
        type: 'syn_stream',
        streamId: id,
        associatedStreamId: 0,
        priority: 0,
        flags: fin ? FLAG_FIN : 0,
        headerBlock: Buffer.alloc(0),
      },
      headers,
    );
    return stream;
  }

  ping(id: number = this.options.server ? 2 : 1): void {
    this.send({ type: 'ping', id });
  }

  /** Sends GOAWAY and ends the socket once what is queued has gone. */
  goAway(status = 0): void {
    if (this.closed) return;
    this.send({ type: 'goaway', lastGoodStreamId: this.lastPeerId, status });
    this.afterQueued(() => this.socket.end());
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const s of [...this.streams.values()]) s.destroy();
    this.streams.clear();
    this.compressor.close();
    this.decompressor.close();
    if (!this.socket.destroyed) this.socket.destroy();
    this.emit('close');
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** @internal Queues a frame; a header block, when given, is compressed in queue order. */
  send(frame: Frame, headers?: SpdyHeaders): void {
    if (this.closed) return;
    this.sendQueue = this.sendQueue
      .then(async () => {
        if (this.closed) return;
        if (headers && 'headerBlock' in frame) frame.headerBlock = await this.compressor.compress(headers);
        this.socket.write(encodeFrame(frame));
      })
      .catch((err: Error) => this.fail(err));
  }

  /** @internal */
  afterQueued(cb: () => void): void {
    this.sendQueue = this.sendQueue.then(cb, cb);
  }

  /** @internal */
  forget(id: number): void {
    this.streams.delete(id);
  }

  /** Takes bytes read from the socket (also the bytes that came with the upgrade request). */
  feed(chunk: Buffer): void {
    if (this.closed) return;
    let frames: Frame[];
    try {
      frames = this.parser.push(chunk);
    } catch (err) {
      this.fail(err as Error);
      return;
    }
    for (const frame of frames) {
      this.recvQueue = this.recvQueue.then(() => this.handle(frame)).catch((err: Error) => this.fail(err));
    }
  }

  private fail(err: Error): void {
    if (this.closed) return;
    if (err instanceof SpdyProtocolError) {
      try {
        this.socket.write(encodeFrame({ type: 'goaway', lastGoodStreamId: this.lastPeerId, status: 1 }));
      } catch {
        // the socket is already gone
      }
    }
    if (this.listenerCount('error') > 0) this.emit('error', err);
    this.close();
  }

  private async handle(frame: Frame): Promise<void> {
    if (this.closed) return;
    switch (frame.type) {
      case 'syn_stream': {
        const headers = await this.decompressor.decompress(frame.headerBlock);
        const peerParity = this.options.server ? 1 : 0;
        if (frame.streamId % 2 !== peerParity || frame.streamId <= this.lastPeerId) {
          this.send({ type: 'rst_stream', streamId: frame.streamId, status: RstStatus.ProtocolError });
          return;
        }
        this.lastPeerId = frame.streamId;
        const stream = new SpdyStream(this, frame.streamId, headers);
        this.streams.set(frame.streamId, stream);
        if (frame.flags & FLAG_FIN) stream.push(null);
        this.emit('stream', stream);
        return;
      }
      case 'syn_reply': {
        const headers = await this.decompressor.decompress(frame.headerBlock);
        const stream = this.streams.get(frame.streamId);
        stream?.receivedReply(headers);
        if (stream && frame.flags & FLAG_FIN) stream.receivedData(Buffer.alloc(0), true);
        return;
      }
      case 'headers': {
        const headers = await this.decompressor.decompress(frame.headerBlock);
        const stream = this.streams.get(frame.streamId);
        if (stream) Object.assign(stream.headers, headers);
        if (stream && frame.flags & FLAG_FIN) stream.receivedData(Buffer.alloc(0), true);
        return;
      }
      case 'data': {
        const stream = this.streams.get(frame.streamId);
        if (!stream) {
          this.send({ type: 'rst_stream', streamId: frame.streamId, status: RstStatus.InvalidStream });
          return;
        }
        stream.receivedData(frame.data, (frame.flags & FLAG_FIN) !== 0);
        return;
      }
      case 'rst_stream':
        this.streams.get(frame.streamId)?.destroy();
        return;
      case 'ping':
        // Echo the peer's pings (ids of the other parity); ours coming back need nothing.
        if (frame.id % 2 === (this.options.server ? 1 : 0)) this.send(frame);
        return;
      case 'goaway':
        this.goAway();
        return;
      case 'settings':
      case 'window_update':
        // Senders here never block on the peer's window (neither does spdystream); nothing to track.
        return;
    }
  }
}
