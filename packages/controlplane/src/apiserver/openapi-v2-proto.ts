import { stringify as toYaml } from 'yaml';

/**
 * The OpenAPI v2 document in the protobuf encoding clients ask for
 * (`application/com.github.proto-openapi.spec.v2@v1.0+protobuf`, messages of gnostic's openapi_v2
 * package). kubectl downloads it for client-side validation when the v3 document does not describe a kind;
 * the subset nodelet's generated document uses is encoded: definitions (schemas with $ref, type, format,
 * items, properties, additionalProperties, required, vendor extensions) and paths (operations with their
 * parameters, responses and vendor extensions).
 */
type Json = any;

class Writer {
  private readonly parts: Buffer[] = [];
  private size = 0;

  private push(b: Buffer): void {
    this.parts.push(b);
    this.size += b.length;
  }

  private varint(n: number): void {
    const bytes: number[] = [];
    let v = n;
    while (v > 127) {
      bytes.push((v & 127) | 128);
      v = Math.floor(v / 128);
    }
    bytes.push(v);
    this.push(Buffer.from(bytes));
  }

  private key(field: number, wire: number): void {
    this.varint(field * 8 + wire);
  }

  string(field: number, value: string | undefined): void {
    if (value === undefined || value === '') return;
    const b = Buffer.from(value, 'utf8');
    this.key(field, 2);
    this.varint(b.length);
    this.push(b);
  }

  bool(field: number, value: boolean | undefined): void {
    if (!value) return;
    this.key(field, 0);
    this.varint(1);
  }

  message(field: number, write: (w: Writer) => void): void {
    const inner = new Writer();
    write(inner);
    const b = inner.finish();
    this.key(field, 2);
    this.varint(b.length);
    this.push(b);
  }

  finish(): Buffer {
    return Buffer.concat(this.parts, this.size);
  }
}

function vendorExtensions(w: Writer, field: number, obj: Json): void {
  for (const [name, value] of Object.entries(obj ?? {})) {
    if (!name.startsWith('x-')) continue;
    w.message(field, (n) => {
      n.string(1, name);
      n.message(2, (any) => any.string(2, toYaml(value)));
    });
  }
}

function schema(w: Writer, s: Json): void {
  w.string(1, s.$ref);
  w.string(2, s.format);
  w.string(4, s.description);
  for (const r of s.required ?? []) w.string(19, r);
  if (s.additionalProperties !== undefined && typeof s.additionalProperties === 'object') {
    w.message(21, (a) => a.message(1, (x) => schema(x, s.additionalProperties)));
  }
  if (s.type) w.message(22, (t) => t.string(1, s.type));
  if (s.items) w.message(23, (i) => i.message(1, (x) => schema(x, s.items)));
  for (const a of s.allOf ?? []) w.message(24, (x) => schema(x, a));
  if (s.properties) {
    w.message(25, (p) => {
      for (const [name, value] of Object.entries(s.properties)) {
        p.message(1, (n) => {
          n.string(1, name);
          n.message(2, (x) => schema(x, value));
        });
      }
    });
  }
  vendorExtensions(w, 31, s);
}

function parameter(w: Writer, p: Json): void {
  w.message(1, (param) => {
    if (p.in === 'body') {
      param.message(1, (b) => {
        b.string(1, p.description);
        b.string(2, p.name);
        b.string(3, p.in);
        b.bool(4, p.required);
        b.message(5, (x) => schema(x, p.schema ?? {}));
      });
      return;
    }
    param.message(2, (nb) => {
      if (p.in === 'path') {
        nb.message(4, (q) => {
          q.bool(1, p.required);
          q.string(2, p.in);
          q.string(3, p.description);
          q.string(4, p.name);
          q.string(5, p.type);
          q.bool(19, p.uniqueItems);
        });
      } else {
        nb.message(3, (q) => {
          q.bool(1, p.required);
          q.string(2, p.in);
          q.string(3, p.description);
          q.string(4, p.name);
          q.string(6, p.type);
          q.bool(20, p.uniqueItems);
        });
      }
    });
  });
}

function operation(w: Writer, op: Json): void {
  w.string(5, op.operationId);
  for (const c of op.consumes ?? []) w.string(7, c);
  for (const p of op.parameters ?? []) w.message(8, (x) => parameter(x, p));
  if (op.responses) {
    w.message(9, (r) => {
      for (const [code, resp] of Object.entries<Json>(op.responses)) {
        r.message(1, (n) => {
          n.string(1, code);
          n.message(2, (v) =>
            v.message(1, (x) => {
              x.string(1, resp.description);
              if (resp.schema) x.message(2, (si) => si.message(1, (s) => schema(s, resp.schema)));
            }),
          );
        });
      }
    });
  }
  vendorExtensions(w, 13, op);
}

const verbs: [string, number][] = [
  ['get', 2],
  ['put', 3],
  ['post', 4],
  ['delete', 5],
  ['patch', 8],
];

/** Encodes a (JSON) OpenAPI v2 document as gnostic's `openapi.v2.Document`. */
export function encodeOpenApiV2(doc: Json): Buffer {
  const w = new Writer();
  w.string(1, doc.swagger);
  w.message(2, (i) => {
    i.string(1, doc.info?.title);
    i.string(2, doc.info?.version);
  });
  w.message(8, (paths) => {
    for (const [path, item] of Object.entries<Json>(doc.paths ?? {})) {
      paths.message(2, (n) => {
        n.string(1, path);
        n.message(2, (pi) => {
          for (const [verb, field] of verbs)
            if (item[verb]) pi.message(field, (o) => operation(o, item[verb]));
          for (const p of item.parameters ?? []) pi.message(9, (x) => parameter(x, p));
        });
      });
    }
  });
  w.message(9, (defs) => {
    for (const [name, s] of Object.entries<Json>(doc.definitions ?? {})) {
      defs.message(1, (n) => {
        n.string(1, name);
        n.message(2, (x) => schema(x, s));
      });
    }
  });
  return w.finish();
}
