import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/**
 * A kubeconfig's text as data. Loading the `yaml` package costs a process ~0.1 s of CPU and ~7 MiB, more
 * than the rest of a proxy's client, for a file kubectl, kubeadm and nodelet all write in one plain
 * shape: block mappings and sequences of plain or quoted scalars. That shape — and JSON — is read here;
 * anything else (flow collections, anchors, tags, block scalars, multi-line or number-like scalars,
 * comments after a value, tabs) goes to the `yaml` package, loaded only then.
 */
export function parseKubeconfigText(text: string): unknown {
  if (/^\s*\{/.test(text)) {
    try {
      return JSON.parse(text);
    } catch {
      // not JSON after all: YAML's flow syntax, or an error the yaml package describes better
    }
  }
  const plain = readPlainYaml(text);
  if (plain !== undefined) return plain;
  const { parse } = require('yaml') as typeof import('yaml');
  return parse(text);
}

interface Line {
  indent: number;
  text: string;
}

class NotPlain extends Error {}

/** The document in the plain block shape, or undefined when it is anything else. */
export function readPlainYaml(text: string): unknown {
  const lines: Line[] = [];
  for (const [n, raw] of text.split('\n').entries()) {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    const body = line.trimStart();
    if (body === '' || body.startsWith('#') || (n === 0 && line === '---')) continue;
    if (/[\t]/.test(line) || line.trimEnd() !== line) return undefined;
    lines.push({ indent: line.length - body.length, text: body });
  }
  if (lines.length === 0 || lines[0]!.indent !== 0) return undefined;
  try {
    const [value, next] = block(lines, 0, 0);
    return next === lines.length ? value : undefined;
  } catch (err) {
    if (err instanceof NotPlain) return undefined;
    throw err;
  }
}

const KEY = /^([A-Za-z0-9_][A-Za-z0-9_./-]*):(?: (.*))?$/;

/** The mapping or sequence whose first line is lines[i], at `indent`: its value and the next line. */
function block(lines: Line[], i: number, indent: number): [unknown, number] {
  return lines[i]!.text.startsWith('- ') ? sequence(lines, i, indent) : mapping(lines, i, indent);
}

function mapping(lines: Line[], i: number, indent: number): [unknown, number] {
  const out: Record<string, unknown> = {};
  while (i < lines.length && lines[i]!.indent >= indent) {
    const line = lines[i]!;
    const m = KEY.exec(line.text);
    // A key must read as the same string (not null, a bool or a number) and be new.
    if (line.indent !== indent || !m || scalar(m[1]!) !== m[1] || m[1] === '__proto__') throw new NotPlain();
    if (Object.hasOwn(out, m[1]!)) throw new NotPlain();
    i++;
    if (m[2] !== undefined) {
      out[m[1]!] = scalar(m[2].trimStart());
      continue;
    }
    // `key:` alone: a nested block, deeper or (a sequence) at the same indent, else null.
    const next = lines[i];
    if (next && (next.indent > indent || (next.indent === indent && next.text.startsWith('- ')))) {
      [out[m[1]!], i] = block(lines, i, next.indent);
    } else {
      out[m[1]!] = null;
    }
  }
  return [out, i];
}

function sequence(lines: Line[], i: number, indent: number): [unknown, number] {
  const out: unknown[] = [];
  while (i < lines.length && lines[i]!.indent === indent && lines[i]!.text.startsWith('- ')) {
    const content = lines[i]!.text.slice(2);
    const inner = indent + 2 + (content.length - content.trimStart().length);
    const item = content.trimStart();
    if (KEY.test(item) || item.startsWith('- ')) {
      // `- key: value` opens a mapping (or `- - x` a sequence) whose lines sit at the item's column.
      lines[i] = { indent: inner, text: item };
      const [value, next] = block(lines, i, inner);
      out.push(value);
      i = next;
    } else {
      out.push(scalar(item));
      i++;
    }
  }
  if (i < lines.length && lines[i]!.indent > indent) throw new NotPlain();
  return [out, i];
}

/** A one-line scalar: quoted, or plain text that YAML's core schema reads as a string, bool or null. */
function scalar(text: string): unknown {
  if (text === '' || text === '[]' || text === '{}') return text === '[]' ? [] : text === '{}' ? {} : null;
  if (text.startsWith('"')) {
    const m = /^"((?:[^"\\]|\\["\\/nt])*)"$/.exec(text);
    if (!m) throw new NotPlain();
    return m[1]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c === 't' ? '\t' : c));
  }
  if (text.startsWith("'")) {
    const m = /^'((?:[^']|'')*)'$/.exec(text);
    if (!m) throw new NotPlain();
    return m[1]!.replace(/''/g, "'");
  }
  if (/^(true|True|TRUE|false|False|FALSE)$/.test(text)) return text[0]!.toLowerCase() === 't';
  if (/^(~|null|Null|NULL)$/.test(text)) return null;
  // Indicators, number-like text (ints, floats, .inf, 0x…), and text a comment or a key could hide in.
  if (/^[-?:,[\]{}#&*!|>'"%@`+.0-9]/.test(text) || /: |:$| #/.test(text)) throw new NotPlain();
  return text;
}
