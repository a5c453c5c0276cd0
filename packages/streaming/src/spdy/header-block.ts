/**
 * SPDY/3 name/value header blocks (§2.6.10): a count, then length-prefixed lower-case names and values
 * (several values of one name joined by NUL), compressed by one zlib stream per direction for the whole
 * session, each block ending on a sync flush.
 */
import zlib from 'node:zlib';
import { SPDY3_DICTIONARY } from './dictionary.js';
import { SpdyProtocolError } from './frames.js';

export type SpdyHeaders = Record<string, string>;

/** Largest decompressed header block accepted: a peer cannot make us inflate without bound. */
const MAX_HEADER_BYTES = 1 << 20;

export function encodeHeaderBlock(headers: SpdyHeaders): Buffer {
  const parts: Buffer[] = [];
  const entries = Object.entries(headers);
  const count = Buffer.alloc(4);
  count.writeUInt32BE(entries.length);
  parts.push(count);
  for (const [name, value] of entries) {
    for (const s of [name.toLowerCase(), value]) {
      const bytes = Buffer.from(s, 'utf8');
      const len = Buffer.alloc(4);
      len.writeUInt32BE(bytes.length);
      parts.push(len, bytes);
    }
  }
  return Buffer.concat(parts);
}

export function decodeHeaderBlock(block: Buffer): SpdyHeaders {
  const headers: SpdyHeaders = {};
  const read = (at: number, what: string): [string, number] => {
    if (at + 4 > block.length) throw new SpdyProtocolError(`header block truncated in ${what} length`);
    const len = block.readUInt32BE(at);
    if (at + 4 + len > block.length) throw new SpdyProtocolError(`header block truncated in ${what}`);
    return [block.toString('utf8', at + 4, at + 4 + len), at + 4 + len];
  };
  if (block.length < 4) throw new SpdyProtocolError('header block shorter than its count');
  const count = block.readUInt32BE(0);
  let at = 4;
  for (let i = 0; i < count; i++) {
    let name: string;
    let value: string;
    [name, at] = read(at, 'name');
    [value, at] = read(at, 'value');
    if (name === '') throw new SpdyProtocolError('header with an empty name');
    headers[name.toLowerCase()] = value;
  }
  return headers;
}

/** A non-final stored deflate block (RFC 1951 §3.2.4): byte-aligned, LEN, ~LEN, the bytes. */
function storedBlock(data: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt16LE(data.length, 1);
  head.writeUInt16LE(~data.length & 0xffff, 3);
  return Buffer.concat([head, data]);
}

/**
 * One direction's compressor. It writes the zlib stream in stored (uncompressed) blocks: a valid zlib
 * stream every inflater reads (it asks for no preset dictionary, so it needs none), and — unlike
 * node:zlib's asynchronous streams — synchronous and exactly one block per header block.
 */
export class HeaderCompressor {
  private started = false;
  async compress(headers: SpdyHeaders): Promise<Buffer> {
    const plain = encodeHeaderBlock(headers);
    const parts: Buffer[] = [];
    if (!this.started) {
      this.started = true;
      parts.push(Buffer.from([0x78, 0x01])); // deflate, 32K window, no preset dictionary
    }
    for (let at = 0; at < plain.length; at += 0xffff)
      parts.push(storedBlock(plain.subarray(at, at + 0xffff)));
    // An empty stored block ends each header block, as a sync flush does: Go's inflater reads the
    // next block header right after a block's data, and must find one rather than the end of input.
    parts.push(storedBlock(Buffer.alloc(0)));
    return Buffer.concat(parts);
  }
  close(): void {}
}

/** Compressed bytes one session may send us in header blocks, in all (bounds the re-inflation below). */
const MAX_HEADER_HISTORY = 4 << 20;

/**
 * The peer's side: one zlib stream for the session, primed with the dictionary. node:zlib has no
 * public synchronous stateful inflate, so each block re-inflates the session's compressed history
 * (header blocks are small and few) and takes the new bytes.
 */
export class HeaderDecompressor {
  private history: Buffer = Buffer.alloc(0);
  private produced = 0;
  async decompress(block: Buffer): Promise<SpdyHeaders> {
    if (this.history.length + block.length > MAX_HEADER_HISTORY) {
      throw new SpdyProtocolError(`more than ${MAX_HEADER_HISTORY} bytes of header blocks in one session`);
    }
    this.history = Buffer.concat([this.history, block]);
    let out: Buffer;
    try {
      out = zlib.inflateSync(this.history, {
        dictionary: SPDY3_DICTIONARY,
        finishFlush: zlib.constants.Z_SYNC_FLUSH,
        maxOutputLength: this.produced + MAX_HEADER_BYTES,
      });
    } catch (err) {
      throw new SpdyProtocolError(`header compression: ${(err as Error).message}`);
    }
    const fresh = out.subarray(this.produced);
    this.produced = out.length;
    return decodeHeaderBlock(fresh);
  }
  close(): void {}
}
