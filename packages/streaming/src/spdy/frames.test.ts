import test from 'ava';
import zlib from 'node:zlib';
import { SPDY3_DICTIONARY } from './dictionary.js';
import { encodeFrame, FLAG_FIN, type Frame, FrameParser, SpdyProtocolError } from './frames.js';
import {
  decodeHeaderBlock,
  encodeHeaderBlock,
  HeaderCompressor,
  HeaderDecompressor,
} from './header-block.js';

const frames: Frame[] = [
  { type: 'data', streamId: 5, flags: FLAG_FIN, data: Buffer.from('hello') },
  {
    type: 'syn_stream',
    streamId: 1,
    associatedStreamId: 0,
    priority: 3,
    flags: 0,
    headerBlock: Buffer.from([1, 2, 3]),
  },
  { type: 'syn_reply', streamId: 1, flags: FLAG_FIN, headerBlock: Buffer.from([9]) },
  { type: 'rst_stream', streamId: 7, status: 5 },
  {
    type: 'settings',
    flags: 0,
    entries: [
      { id: 7, flags: 1, value: 65536 },
      { id: 4, flags: 0, value: 100 },
    ],
  },
  { type: 'ping', id: 0xfffffffe },
  { type: 'goaway', lastGoodStreamId: 9, status: 1 },
  { type: 'headers', streamId: 3, flags: 0, headerBlock: Buffer.from('xy') },
  { type: 'window_update', streamId: 3, delta: 0x7fffffff },
];

test('every frame type survives encode → parse', (t) => {
  for (const frame of frames) {
    const parsed = new FrameParser().push(encodeFrame(frame));
    t.deepEqual(parsed, [frame], frame.type);
  }
});

test('frames split at every byte boundary come out whole and in order', (t) => {
  const bytes = Buffer.concat(frames.map(encodeFrame));
  const parser = new FrameParser();
  const out: Frame[] = [];
  for (let i = 0; i < bytes.length; i++) out.push(...parser.push(bytes.subarray(i, i + 1)));
  t.deepEqual(out, frames);
  t.is(parser.pending, 0);
});

test('a truncated frame is held back, not misread', (t) => {
  const bytes = encodeFrame(frames[1]!);
  const parser = new FrameParser();
  t.deepEqual(parser.push(bytes.subarray(0, bytes.length - 1)), []);
  t.is(parser.pending, bytes.length - 1);
});

test('malformed control frames are a SpdyProtocolError, not a crash', (t) => {
  const shortPing = Buffer.from([0x80, 3, 0, 6, 0, 0, 0, 2, 0, 0]);
  t.throws(() => new FrameParser().push(shortPing), { instanceOf: SpdyProtocolError, message: /PING/ });
  const badVersion = Buffer.from([0x80, 2, 0, 6, 0, 0, 0, 4, 0, 0, 0, 1]);
  t.throws(() => new FrameParser().push(badVersion), { instanceOf: SpdyProtocolError, message: /version 2/ });
  const settingsLie = Buffer.from([0x80, 3, 0, 4, 0, 0, 0, 4, 0, 0, 0, 9]);
  t.throws(() => new FrameParser().push(settingsLie), { instanceOf: SpdyProtocolError, message: /SETTINGS/ });
});

test('unknown control frame types are skipped (§2.2.1)', (t) => {
  const unknown = Buffer.from([0x80, 3, 0, 0x42, 0, 0, 0, 1, 7]);
  t.deepEqual(new FrameParser().push(Buffer.concat([unknown, encodeFrame(frames[5]!)])), [frames[5]!]);
});

test('the SPDY/3 dictionary has the spec length and primes zlib', (t) => {
  t.is(SPDY3_DICTIONARY.length, 1423);
  t.is(SPDY3_DICTIONARY.subarray(0, 11).toString('latin1'), '\0\0\0\x07options');
  t.true(SPDY3_DICTIONARY.toString('latin1').endsWith(',*,enq=0.'));
  const text = Buffer.from('accept-encodinggzip,deflate,sdch');
  const packed = zlib.deflateSync(text, { dictionary: SPDY3_DICTIONARY });
  t.deepEqual(zlib.inflateSync(packed, { dictionary: SPDY3_DICTIONARY }), text);
});

test('header blocks round trip, names lower-cased, over one shared zlib context', async (t) => {
  t.deepEqual(decodeHeaderBlock(encodeHeaderBlock({ StreamType: 'stdout', port: '80' })), {
    streamtype: 'stdout',
    port: '80',
  });
  const c = new HeaderCompressor();
  const d = new HeaderDecompressor();
  for (const h of <Record<string, string>[]>[
    { streamtype: 'error' },
    { streamtype: 'stdin' },
    { streamtype: 'stdout', requestid: '1' },
  ]) {
    t.deepEqual(await d.decompress(await c.compress(h)), h);
  }
  c.close();
  d.close();
});

test('a truncated or garbage header block is a SpdyProtocolError', async (t) => {
  t.throws(() => decodeHeaderBlock(Buffer.from([0, 0, 0, 1, 0, 0, 0, 9, 97])), {
    instanceOf: SpdyProtocolError,
  });
  const d = new HeaderDecompressor();
  await t.throwsAsync(d.decompress(Buffer.from('not zlib at all')), { instanceOf: SpdyProtocolError });
});

test('a header block from a dictionary-primed deflater (as Go peers send) decodes', async (t) => {
  const headers = { streamtype: 'stdout', port: '8080', requestid: '0' };
  const block = zlib.deflateSync(encodeHeaderBlock(headers), {
    dictionary: SPDY3_DICTIONARY,
    finishFlush: zlib.constants.Z_SYNC_FLUSH,
  });
  t.deepEqual(await new HeaderDecompressor().decompress(block), headers);
});
