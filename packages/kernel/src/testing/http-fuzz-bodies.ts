/**
 * Request bodies for the HTTP fuzzer: malformed and truncated JSON, bodies nested far deeper than any
 * decoder should follow (JSON and YAML, flow and block), alias bombs, values of the wrong type, unknown
 * content types, lying lengths and bodies past a size limit. Each comes with the headers that frame it.
 */

export type Rng = () => number;

export const pick = <T>(rng: Rng, xs: readonly T[]): T => xs[Math.floor(rng() * xs.length)]!;

/** A body and how it is framed: its Content-Type and either a (possibly lying) length or chunks. */
export interface FuzzBody {
  name: string;
  contentType: string;
  body: Buffer;
  /** The Content-Length announced; absent: the body's real length. */
  declaredLength?: number;
  /** Sent with Transfer-Encoding: chunked instead of a length. */
  chunked?: boolean;
}

const jsonTypes = [
  'application/json',
  'application/merge-patch+json',
  'application/strategic-merge-patch+json',
  'application/json-patch+json',
];
const yamlTypes = ['application/yaml', 'application/apply-patch+yaml'];

const malformedJson = [
  '{"metadata": {',
  '{"a":}',
  '[1,]',
  '{"metadata":{"name":"x"}}garbage',
  '\u0000\u0001',
  '{"apiVersion": 3, "kind": ["x"]}',
  '{"metadata": {"name": 5, "labels": "x"}}',
  '{"metadata": {"name": "x", "resourceVersion": "abc"}, "data": {"k": 1}}',
  '{"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "x"}}',
  '{"apiVersion": "nope/v9", "kind": "Nothing"}',
  'null',
  '"a string"',
  '1e309',
  '[{"op": "replace", "path": "/metadata/name/~9", "value": 1}]',
  '[{"op": "move", "from": "/nope", "path": "/x"}]',
  '[{"op": "test"}]',
  '{"metadata": {"name": "x", "managedFields": [{"fieldsV1": {"f:a": {"f:b": 1}}}]}}',
  '{"spec": {"containers": [{"name": "c", "image": "i", "ports": [{"containerPort": "http"}]}]}}',
];

const malformedYaml = [
  'kind: Pod\nmetadata: [\n  name: x',
  'a: b\n\tc: d\n',
  '---\na: 1\n---\nb: 2\n',
  'a: &x\n  b: *x\n',
  '? [a, b]\n: c\n',
  'a: !!binary "%%%"\n',
  'metadata:\n  name: x\n  labels:\n    - a\n',
];

/** A document whose aliases would expand exponentially: refused, never expanded. */
function aliasBomb(levels: number): string {
  const lines = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]'];
  for (let i = 1; i < levels; i++) {
    const refs = Array.from({ length: 10 }, () => `*a${i - 1}`).join(', ');
    lines.push(`a${i}: &a${i} [${refs}]`);
  }
  return lines.join('\n') + '\n';
}

function deepJson(rng: Rng, depth: number): string {
  if (rng() < 0.5) return '['.repeat(depth) + ']'.repeat(depth);
  return '{"metadata":{"name":"deep"},"data":' + '{"a":'.repeat(depth) + '1' + '}'.repeat(depth + 1);
}

function deepYaml(rng: Rng, depth: number): string {
  switch (Math.floor(rng() * 3)) {
    case 0:
      return 'data: ' + '['.repeat(depth) + ']'.repeat(depth) + '\n';
    case 1:
      return 'data: ' + '- '.repeat(depth) + 'a\n';
    default: // an indentation ladder: as deep as the size allows
      return Array.from({ length: Math.min(depth, 600) }, (_, i) => `${' '.repeat(i)}a:`).join('\n') + ' 1\n';
  }
}

/** One chunk of a body past any limit, made once: the fuzzer may send it many times. */
let filler: Buffer | undefined;

/** A random body for a request, under a server whose body limit is `limit` bytes. */
export function fuzzBody(rng: Rng, limit: number): FuzzBody {
  const depth = pick(rng, [501, 1_000, 5_000, 20_000]);
  switch (Math.floor(rng() * 9)) {
    case 0:
    case 1: {
      const text = pick(rng, malformedJson);
      return {
        name: `malformed JSON ${JSON.stringify(text.slice(0, 40))}`,
        contentType: pick(rng, jsonTypes),
        body: Buffer.from(text),
      };
    }
    case 2:
      return {
        name: `JSON nested ${depth} deep`,
        contentType: pick(rng, jsonTypes),
        body: Buffer.from(deepJson(rng, depth)),
      };
    case 3:
      return {
        name: `YAML nested ${depth} deep`,
        contentType: pick(rng, yamlTypes),
        body: Buffer.from(deepYaml(rng, depth)),
      };
    case 4: {
      const text = rng() < 0.5 ? pick(rng, malformedYaml) : aliasBomb(6);
      return {
        name: `malformed YAML ${JSON.stringify(text.slice(0, 30))}`,
        contentType: pick(rng, yamlTypes),
        body: Buffer.from(text),
      };
    }
    case 5: {
      // Cut short: the connection ends (or the deadline comes) before the announced length arrives.
      const body = Buffer.from('{"metadata":{"name":"truncated"},"data":{"a":"');
      return {
        name: 'truncated body',
        contentType: 'application/json',
        body,
        declaredLength: body.length + 1 + Math.floor(rng() * 1000),
      };
    }
    case 6:
      return {
        name: 'a Content-Length past the limit',
        contentType: 'application/json',
        body: Buffer.from('{}'),
        declaredLength: limit + 1 + Math.floor(rng() * limit),
      };
    case 7: {
      if (rng() < 0.9) {
        const type = pick(rng, [
          'application/vnd.kubernetes.protobuf',
          'text/plain',
          'application/x-www-form-urlencoded',
          'multipart/form-data; boundary=x',
          '',
          'application/json; charset=utf-16',
        ]);
        const noise = Buffer.from(
          Array.from({ length: Math.floor(rng() * 200) }, () => Math.floor(rng() * 256)),
        );
        const body =
          type === 'application/vnd.kubernetes.protobuf' && rng() < 0.5
            ? Buffer.concat([Buffer.from('k8s\u0000'), noise])
            : noise;
        return { name: `random bytes as ${JSON.stringify(type)}`, contentType: type, body };
      }
      // Chunked, growing past the limit: the server must stop reading, not buffer it all.
      filler ??= Buffer.alloc(limit + 64 * 1024, 'a');
      return {
        name: 'a chunked body past the limit',
        contentType: 'application/json',
        body: filler,
        chunked: true,
      };
    }
    default: {
      // Invalid UTF-8 inside a JSON string.
      const body = Buffer.concat([
        Buffer.from('{"metadata":{"name":"'),
        Buffer.from([0xff, 0xfe, 0xc0, 0xaf]),
        Buffer.from('"}}'),
      ]);
      return { name: 'invalid UTF-8 in JSON', contentType: 'application/json', body };
    }
  }
}

/** The header lines and bytes of `b` as sent. */
export function frameBody(b: FuzzBody): { headers: string[]; bytes: Buffer } {
  const headers = b.contentType ? [`Content-Type: ${b.contentType}`] : [];
  if (b.chunked) {
    const chunk = 16 * 1024;
    const parts: Buffer[] = [];
    for (let at = 0; at < b.body.length; at += chunk) {
      const piece = b.body.subarray(at, at + chunk);
      parts.push(Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n'));
    }
    parts.push(Buffer.from('0\r\n\r\n'));
    return { headers: [...headers, 'Transfer-Encoding: chunked'], bytes: Buffer.concat(parts) };
  }
  return { headers: [...headers, `Content-Length: ${b.declaredLength ?? b.body.length}`], bytes: b.body };
}
