/**
 * A request fuzzer for the HTTP servers nodelet serves (the kubelet's API, the read-only port, the API
 * server's proxied paths). It writes raw bytes on a fresh connection — so it can send what no HTTP client
 * would: bad percent-escapes, huge headers and URLs, conflicting lengths, bodies too deep, too large, cut
 * short or malformed (http-fuzz-bodies.ts), bytes sent slowly, upgrades followed by truncated WebSocket or
 * SPDY frames — and reads back the first response head, if any (raw-http.ts). Deterministic from a seed, so
 * a failing case is replayed by its index.
 */
import { frameBody, fuzzBody, pick, type Rng } from './http-fuzz-bodies.js';
import type { RawAnswer } from './raw-http.js';

/** One request: a name that tells what was mutated, and the bytes sent. */
export interface FuzzCase {
  name: string;
  bytes: Buffer;
  /** A HEAD request: its answer has no body to carry a message. */
  head?: boolean;
  /** A slow client: the bytes go out in a few pieces, this long apart. */
  pauseMs?: number;
}

export interface FuzzOptions {
  /** Seed of the generator (mulberry32). */
  seed: number;
  /** Paths the server really serves, with their query strings: the starting points of mutation. */
  paths: readonly string[];
  /** Paths that accept an HTTP upgrade (exec, attach, port-forward), to send broken streams to. */
  upgradePaths?: readonly string[];
  /** Query parameter names the server reads, to give bad values. */
  params?: readonly string[];
  /** Extra header lines for every request (e.g. an Authorization header), without CRLF. */
  headers?: readonly string[];
  /** `METHOD /path` targets that take a body (create, update, patch), to send bad bodies to. */
  bodyTargets?: readonly string[];
  /** The server's body limit in bytes, to send bodies and lengths past it (default 3 MiB). */
  bodyLimit?: number;
}

function mulberry32(seed: number): Rng {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const badEscapes = ['%ff', '%', '%e0%a4', '%00', '%2f', '%%', '%zz', '%c0%af', '%ed%a0%80', '%0d%0a'];
const pathNoise = ['..', '.', '', '//', '%2e%2e', 'é', '\u{1F600}', '*', ';', '?', '#', 'a'.repeat(5000)];
const badValues = [
  '',
  '-1',
  'abc',
  '1e309',
  '99999999999999999999999',
  '0x10',
  'NaN',
  '%ff',
  'true,false',
  ' ',
  // Selectors and resource versions that do not parse.
  'a in (b',
  'a=b,',
  'a==b==c',
  '!',
  'metadata.name=',
  'x%3D%zz',
  '(a)',
  'a notin b',
  '18446744073709551616',
  '-9223372036854775809',
];
const methods = [
  'GET',
  'POST',
  'PUT',
  'DELETE',
  'PATCH',
  'HEAD',
  'OPTIONS',
  'CONNECT',
  'TRACE',
  'G\u0000T',
  'get',
];

function mutatePath(rng: Rng, path: string): string {
  const [p, q = ''] = path.split('?', 2) as [string, string?];
  const segments = p.split('/');
  const ops = 1 + Math.floor(rng() * 3);
  for (let i = 0; i < ops; i++) {
    const at = Math.floor(rng() * segments.length);
    switch (Math.floor(rng() * 4)) {
      case 0:
        segments[at] = (segments[at] ?? '') + pick(rng, badEscapes);
        break;
      case 1:
        segments.splice(at, 0, pick(rng, pathNoise));
        break;
      case 2:
        segments.splice(at, 1);
        break;
      default:
        segments[at] = pick(rng, badEscapes) + (segments[at] ?? '');
    }
  }
  const mutated = segments.join('/') || '/';
  return q ? `${mutated}?${q}` : mutated;
}

function mutateQuery(rng: Rng, path: string, params: readonly string[]): string {
  if (params.length === 0) return path;
  const extra: string[] = [];
  const n = 1 + Math.floor(rng() * 3);
  for (let i = 0; i < n; i++) extra.push(`${pick(rng, params)}=${pick(rng, badValues)}`);
  return path + (path.includes('?') ? '&' : '?') + extra.join('&');
}

/** Bytes that start like a WebSocket or SPDY frame and end early or lie about their length. */
function brokenFrames(rng: Rng): Buffer {
  const kind = Math.floor(rng() * 4);
  const random = Buffer.from(Array.from({ length: Math.floor(rng() * 64) }, () => Math.floor(rng() * 256)));
  switch (kind) {
    case 0: // a masked WebSocket binary frame announcing 64 KiB, then a few bytes
      return Buffer.concat([Buffer.from([0x82, 0xfe, 0xff, 0xff, 1, 2, 3, 4]), random]);
    case 1: // a WebSocket frame with a 64-bit length of 2^63
      return Buffer.concat([Buffer.from([0x82, 0xff, 0x80, 0, 0, 0, 0, 0, 0, 0]), random]);
    case 2: // a SPDY/3 SYN_STREAM control frame announcing more than follows
      return Buffer.concat([Buffer.from([0x80, 0x03, 0x00, 0x01, 0x00, 0xff, 0xff, 0xff]), random]);
    default: // a SPDY data frame of a stream never opened, then noise
      return Buffer.concat([Buffer.from([0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x10, 0x00]), random]);
  }
}

function request(method: string, target: string, headers: string[], body = ''): Buffer {
  return Buffer.from(
    `${method} ${target} HTTP/1.1\r\nHost: localhost\r\n${headers.map((h) => `${h}\r\n`).join('')}\r\n${body}`,
    'latin1',
  );
}

/**
 * How many fuzz cases a test runs: `full`, scaled by NODELET_FUZZ_SCALE (a number in (0, 1]; default 1).
 * CI's pass with every real component hidden runs the fuzz tests at a tenth (they need no component, and
 * its other pass runs them whole); a bad value is an error naming the variable.
 */
export function fuzzCaseCount(full: number): number {
  const text = process.env.NODELET_FUZZ_SCALE;
  if (text === undefined || text === '') return full;
  const scale = Number(text);
  if (!(scale > 0 && scale <= 1)) {
    throw new Error(`NODELET_FUZZ_SCALE must be a number above 0 and at most 1; got "${text}"`);
  }
  return Math.max(1, Math.round(full * scale));
}

/** `count` requests, deterministic from the seed: mutated paths, bad query values, bad headers, broken streams. */
export function* httpFuzzCases(count: number, opts: FuzzOptions): Generator<FuzzCase> {
  const rng = mulberry32(opts.seed);
  const base = [...(opts.headers ?? [])];
  const params = opts.params ?? [];
  const upgrades = opts.upgradePaths ?? [];
  for (let i = 0; i < count; i++) {
    const path = pick(rng, opts.paths);
    const bodies = opts.bodyTargets ?? [];
    if (bodies.length > 0 && rng() < 0.3) {
      yield bodyCase(rng, i, pick(rng, bodies), base, opts.bodyLimit ?? 3 * 1024 * 1024, params);
      continue;
    }
    const kind = Math.floor(rng() * (upgrades.length > 0 ? 7 : 6));
    switch (kind) {
      case 0: {
        const target = mutatePath(rng, path);
        yield { name: `#${i} path ${JSON.stringify(target)}`, bytes: request('GET', target, base) };
        break;
      }
      case 1: {
        const target = mutateQuery(rng, path, params);
        yield { name: `#${i} query ${JSON.stringify(target)}`, bytes: request('GET', target, base) };
        break;
      }
      case 2: {
        const method = pick(rng, methods);
        const target = rng() < 0.5 ? path : mutatePath(rng, path);
        yield {
          name: `#${i} method ${method} ${JSON.stringify(target)}`,
          bytes: request(method, target, base),
          head: method === 'HEAD',
        };
        break;
      }
      case 3: {
        const size = pick(rng, [8 * 1024, 17 * 1024, 70 * 1024, 200 * 1024]);
        if (rng() < 0.25) {
          const target = `${path}${path.includes('?') ? '&' : '?'}labelSelector=${'a'.repeat(size)}`;
          yield { name: `#${i} URL of ${target.length} bytes`, bytes: request('GET', target, base) };
          break;
        }
        const header = rng() < 0.5 ? `X-Fuzz: ${'a'.repeat(size)}` : `${'X'.repeat(size)}: 1`;
        yield {
          name: `#${i} header of ${size} bytes on ${path}`,
          bytes: request('GET', path, [...base, header]),
        };
        break;
      }
      case 4: {
        const lying = pick(rng, [
          ['Content-Length: 10', 'Content-Length: 20'],
          ['Content-Length: -5'],
          ['Transfer-Encoding: chunked', 'Content-Length: 3'],
          ['Transfer-Encoding: chunked'],
          ['Content-Length: 99999999999999999999'],
        ]);
        const body = lying.includes('Transfer-Encoding: chunked') ? 'zz\r\nabc\r\n' : 'abc';
        yield {
          name: `#${i} body ${lying.join(', ')} on ${path}`,
          bytes: request('POST', path, [...base, ...lying], body),
        };
        break;
      }
      case 5: {
        const target = rng() < 0.5 ? path : mutateQuery(rng, path, params);
        const noise = Buffer.from(
          Array.from({ length: 1 + Math.floor(rng() * 40) }, () => Math.floor(rng() * 256)),
        );
        const line =
          rng() < 0.5 ? request('GET', target, base).subarray(0, 10 + Math.floor(rng() * 20)) : noise;
        yield { name: `#${i} garbage (${line.length} bytes)`, bytes: line };
        break;
      }
      default: {
        const target = rng() < 0.7 ? pick(rng, upgrades) : mutateQuery(rng, pick(rng, upgrades), params);
        const ws = rng() < 0.5;
        const protocol = pick(rng, [
          'v5.channel.k8s.io',
          'v4.channel.k8s.io',
          'portforward.k8s.io',
          'bogus',
          '',
        ]);
        const upgrade = ws
          ? [
              'Connection: Upgrade',
              'Upgrade: websocket',
              'Sec-WebSocket-Version: 13',
              `Sec-WebSocket-Key: ${pick(rng, ['dGhlIHNhbXBsZSBub25jZQ==', 'short', ''])}`,
              `Sec-WebSocket-Protocol: ${protocol}`,
            ]
          : ['Connection: Upgrade', 'Upgrade: SPDY/3.1', `X-Stream-Protocol-Version: ${protocol}`];
        const bytes = Buffer.concat([
          request(rng() < 0.9 ? 'POST' : 'GET', target, [...base, ...upgrade]),
          brokenFrames(rng),
        ]);
        yield {
          name: `#${i} ${ws ? 'websocket' : 'SPDY'} upgrade ${JSON.stringify(target)} then broken frames`,
          bytes,
        };
      }
    }
  }
}

/** A request with a bad body (see http-fuzz-bodies.ts), now and then sent slowly, a piece at a time. */
function bodyCase(
  rng: Rng,
  i: number,
  target: string,
  base: string[],
  limit: number,
  params: readonly string[],
): FuzzCase {
  const [method = 'POST', path = '/'] = target.split(' ', 2);
  const body = fuzzBody(rng, limit);
  const { headers, bytes } = frameBody(body);
  const url = rng() < 0.3 ? mutateQuery(rng, path, params) : path;
  const all = Buffer.concat([request(method, url, [...base, ...headers]), bytes]);
  const slow = rng() < 0.05;
  return {
    name: `#${i} ${method} ${JSON.stringify(url)} with ${body.name}${slow ? ', sent slowly' : ''}`,
    bytes: all,
    ...(slow ? { pauseMs: 10 + Math.floor(rng() * 50) } : {}),
  };
}

/** What a fuzz run found: the answers by status, and the cases whose answer broke the rules. */
export interface FuzzReport {
  statuses: Map<number | undefined, number>;
  failures: string[];
}

/**
 * The rules every server of nodelet keeps: no 5xx, and a 4xx says what was wrong (a HEAD answer has no
 * body to say it in). Undefined when `answer` keeps them, else what broke.
 */
export function breaksTheRules(c: FuzzCase, answer: RawAnswer): string | undefined {
  if (answer.status !== undefined && answer.status >= 500) {
    return `${c.name}: ${answer.status} ${answer.body.slice(0, 200)}`;
  }
  if (answer.status !== undefined && answer.status >= 400 && !c.head && answer.body.trim() === '') {
    return `${c.name}: ${answer.status} without a message`;
  }
  return undefined;
}

/**
 * Sends every case on a connection of its own, `concurrency` at a time (a slow answer — a truncated
 * request waiting for its deadline — holds one slot, not a whole batch), judging each answer.
 */
export async function runFuzz(
  cases: Iterable<FuzzCase>,
  send: (bytes: Buffer, c: FuzzCase) => Promise<RawAnswer>,
  { concurrency = 16, judge = breaksTheRules }: { concurrency?: number; judge?: typeof breaksTheRules } = {},
): Promise<FuzzReport> {
  const report: FuzzReport = { statuses: new Map(), failures: [] };
  const queue = cases[Symbol.iterator]();
  const worker = async () => {
    for (let next = queue.next(); !next.done; next = queue.next()) {
      const answer = await send(next.value.bytes, next.value);
      report.statuses.set(answer.status, (report.statuses.get(answer.status) ?? 0) + 1);
      const failure = judge(next.value, answer);
      if (failure) report.failures.push(failure);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return report;
}

/** `405: 12, 200: 3, none: 1` — for a test's log. */
export function describeStatuses(statuses: Map<number | undefined, number>): string {
  return [...statuses].map(([s, n]) => `${s ?? 'none'}: ${n}`).join(', ');
}
