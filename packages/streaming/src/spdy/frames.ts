/**
 * SPDY/3.1 frames (draft 3.1 §2.2): encode to bytes and parse from a byte stream. Header blocks stay
 * compressed here; the session owns the zlib contexts (./header-block.ts).
 *
 *   control: |1| version(15) | type(16) | flags(8) | length(24) | payload
 *   data:    |0| stream id(31)           | flags(8) | length(24) | payload
 */
export const SPDY_VERSION = 3;
export const FLAG_FIN = 0x01;
export const FLAG_UNIDIRECTIONAL = 0x02;

export const enum FrameType {
  SynStream = 1,
  SynReply = 2,
  RstStream = 3,
  Settings = 4,
  Ping = 6,
  GoAway = 7,
  Headers = 8,
  WindowUpdate = 9,
}

/** RST_STREAM status codes (§2.6.3). */
export const RstStatus = {
  ProtocolError: 1,
  InvalidStream: 2,
  RefusedStream: 3,
  UnsupportedVersion: 4,
  Cancel: 5,
  InternalError: 6,
  FlowControlError: 7,
  StreamInUse: 8,
  StreamAlreadyClosed: 9,
  FrameTooLarge: 11,
} as const;

/** SETTINGS ids (§2.6.4) the sessions use. */
export const SETTINGS_INITIAL_WINDOW_SIZE = 7;

export type Frame =
  | { type: 'data'; streamId: number; flags: number; data: Buffer }
  | {
      type: 'syn_stream';
      streamId: number;
      associatedStreamId: number;
      priority: number;
      flags: number;
      headerBlock: Buffer;
    }
  | { type: 'syn_reply'; streamId: number; flags: number; headerBlock: Buffer }
  | { type: 'rst_stream'; streamId: number; status: number }
  | { type: 'settings'; flags: number; entries: { id: number; flags: number; value: number }[] }
  | { type: 'ping'; id: number }
  | { type: 'goaway'; lastGoodStreamId: number; status: number }
  | { type: 'headers'; streamId: number; flags: number; headerBlock: Buffer }
  | { type: 'window_update'; streamId: number; delta: number };

/** A frame that breaks the protocol; the session answers it with GOAWAY/RST, never a throw upward. */
export class SpdyProtocolError extends Error {
  constructor(message: string) {
    super(`spdy: ${message}`);
    this.name = 'SpdyProtocolError';
  }
}

const MAX_LENGTH = 0xffffff;
const ID_MASK = 0x7fffffff;

function header(buf: Buffer, type: FrameType, flags: number, length: number): void {
  buf.writeUInt16BE(0x8000 | SPDY_VERSION, 0);
  buf.writeUInt16BE(type, 2);
  buf.writeUInt32BE(((flags & 0xff) << 24) | length, 4);
}

function control(type: FrameType, flags: number, payload: Buffer): Buffer {
  if (payload.length > MAX_LENGTH)
    throw new SpdyProtocolError(`frame of ${payload.length} bytes is too large`);
  const out = Buffer.alloc(8 + payload.length);
  header(out, type, flags, payload.length);
  payload.copy(out, 8);
  return out;
}

function u32s(...values: number[]): Buffer {
  const b = Buffer.alloc(values.length * 4);
  values.forEach((v, i) => b.writeUInt32BE(v >>> 0, i * 4));
  return b;
}

export function encodeFrame(frame: Frame): Buffer {
  switch (frame.type) {
    case 'data': {
      if (frame.data.length > MAX_LENGTH) throw new SpdyProtocolError('data frame too large');
      const out = Buffer.alloc(8 + frame.data.length);
      out.writeUInt32BE(frame.streamId & ID_MASK, 0);
      out.writeUInt32BE(((frame.flags & 0xff) << 24) | frame.data.length, 4);
      frame.data.copy(out, 8);
      return out;
    }
    case 'syn_stream': {
      const fixed = Buffer.alloc(10);
      fixed.writeUInt32BE(frame.streamId & ID_MASK, 0);
      fixed.writeUInt32BE(frame.associatedStreamId & ID_MASK, 4);
      fixed[8] = (frame.priority & 0x7) << 5;
      fixed[9] = 0; // slot
      return control(FrameType.SynStream, frame.flags, Buffer.concat([fixed, frame.headerBlock]));
    }
    case 'syn_reply':
      return control(
        FrameType.SynReply,
        frame.flags,
        Buffer.concat([u32s(frame.streamId & ID_MASK), frame.headerBlock]),
      );
    case 'headers':
      return control(
        FrameType.Headers,
        frame.flags,
        Buffer.concat([u32s(frame.streamId & ID_MASK), frame.headerBlock]),
      );
    case 'rst_stream':
      return control(FrameType.RstStream, 0, u32s(frame.streamId & ID_MASK, frame.status));
    case 'settings': {
      const body = Buffer.alloc(4 + frame.entries.length * 8);
      body.writeUInt32BE(frame.entries.length, 0);
      frame.entries.forEach((e, i) => {
        body.writeUInt32BE(((e.flags & 0xff) << 24) | (e.id & 0xffffff), 4 + i * 8);
        body.writeUInt32BE(e.value >>> 0, 8 + i * 8);
      });
      return control(FrameType.Settings, frame.flags, body);
    }
    case 'ping':
      return control(FrameType.Ping, 0, u32s(frame.id));
    case 'goaway':
      return control(FrameType.GoAway, 0, u32s(frame.lastGoodStreamId & ID_MASK, frame.status));
    case 'window_update':
      return control(FrameType.WindowUpdate, 0, u32s(frame.streamId & ID_MASK, frame.delta & ID_MASK));
  }
}

function need(payload: Buffer, n: number, what: string): void {
  if (payload.length < n)
    throw new SpdyProtocolError(`${what} frame of ${payload.length} bytes is shorter than ${n}`);
}

function decodeControl(type: number, flags: number, p: Buffer): Frame | undefined {
  switch (type) {
    case FrameType.SynStream:
      need(p, 10, 'SYN_STREAM');
      return {
        type: 'syn_stream',
        streamId: p.readUInt32BE(0) & ID_MASK,
        associatedStreamId: p.readUInt32BE(4) & ID_MASK,
        priority: p[8]! >> 5,
        flags,
        headerBlock: p.subarray(10),
      };
    case FrameType.SynReply:
      need(p, 4, 'SYN_REPLY');
      return { type: 'syn_reply', streamId: p.readUInt32BE(0) & ID_MASK, flags, headerBlock: p.subarray(4) };
    case FrameType.Headers:
      need(p, 4, 'HEADERS');
      return { type: 'headers', streamId: p.readUInt32BE(0) & ID_MASK, flags, headerBlock: p.subarray(4) };
    case FrameType.RstStream:
      need(p, 8, 'RST_STREAM');
      return { type: 'rst_stream', streamId: p.readUInt32BE(0) & ID_MASK, status: p.readUInt32BE(4) };
    case FrameType.Settings: {
      need(p, 4, 'SETTINGS');
      const n = p.readUInt32BE(0);
      if (p.length !== 4 + n * 8)
        throw new SpdyProtocolError(`SETTINGS says ${n} entries in ${p.length} bytes`);
      const entries = [];
      for (let i = 0; i < n; i++) {
        const idf = p.readUInt32BE(4 + i * 8);
        entries.push({ flags: idf >>> 24, id: idf & 0xffffff, value: p.readUInt32BE(8 + i * 8) });
      }
      return { type: 'settings', flags, entries };
    }
    case FrameType.Ping:
      need(p, 4, 'PING');
      return { type: 'ping', id: p.readUInt32BE(0) };
    case FrameType.GoAway:
      need(p, 8, 'GOAWAY');
      return { type: 'goaway', lastGoodStreamId: p.readUInt32BE(0) & ID_MASK, status: p.readUInt32BE(4) };
    case FrameType.WindowUpdate:
      need(p, 8, 'WINDOW_UPDATE');
      return {
        type: 'window_update',
        streamId: p.readUInt32BE(0) & ID_MASK,
        delta: p.readUInt32BE(4) & ID_MASK,
      };
    default:
      return undefined; // §2.2.1: unknown control frames are ignored
  }
}

/**
 * Cuts a byte stream into frames. `push` returns the complete frames so far and keeps a partial one;
 * a malformed frame throws SpdyProtocolError (callers catch it). `pending` is what a truncated stream
 * left behind.
 */
export class FrameParser {
  private buffer: Buffer = Buffer.alloc(0);

  push(chunk: Buffer): Frame[] {
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    const frames: Frame[] = [];
    while (this.buffer.length >= 8) {
      const b = this.buffer;
      const lengthFlags = b.readUInt32BE(4);
      const length = lengthFlags & 0xffffff;
      const flags = lengthFlags >>> 24;
      // Judge the version from the header alone: garbage must not make us wait for 16 MiB of payload.
      if (b[0]! & 0x80 && (b.readUInt16BE(0) & 0x7fff) !== SPDY_VERSION) {
        throw new SpdyProtocolError(`unsupported version ${b.readUInt16BE(0) & 0x7fff}`);
      }
      if (b.length < 8 + length) break;
      const payload = b.subarray(8, 8 + length);
      this.buffer = b.subarray(8 + length);
      if (b[0]! & 0x80) {
        const frame = decodeControl(b.readUInt16BE(2), flags, payload);
        if (frame) frames.push(frame);
      } else {
        frames.push({
          type: 'data',
          streamId: b.readUInt32BE(0) & ID_MASK,
          flags,
          data: Buffer.from(payload),
        });
      }
    }
    return frames;
  }

  get pending(): number {
    return this.buffer.length;
  }
}
