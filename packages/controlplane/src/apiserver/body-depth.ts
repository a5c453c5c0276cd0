/**
 * How deep a request body nests, measured before it is parsed and without recursion, so a body nested
 * 200,000 levels deep is refused as a 400 instead of overflowing the stack of a parser (the `yaml` library
 * recurses once per flow level and, past ~700, can abort the whole process) or of what handles the object
 * afterwards (schema checks, merge patches, pruning all recurse).
 */
import { CST, Lexer } from 'yaml';
import { badRequest } from './status.js';

/**
 * Levels of nesting a body may have. Upstream's JSON decoder stops at 10,000 (Go's stacks grow); every
 * step after decoding here recurses on a fixed JavaScript stack, and 500 keeps each of them far from its
 * end while no Kubernetes object comes near it.
 */
export const maxBodyDepth = 500;

const tooDeep = (prefix: string) =>
  badRequest(`${prefix}the request body is nested deeper than ${maxBodyDepth} levels`);

const openBrace = 0x7b; // {
const closeBrace = 0x7d; // }
const openBracket = 0x5b; // [
const closeBracket = 0x5d; // ]
const quote = 0x22; // "
const backslash = 0x5c;

/** Refuses JSON text nested deeper than `maxBodyDepth`: one pass over the text, strings skipped. */
export function checkJsonDepth(text: string): void {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === backslash) i++;
      else if (c === quote) inString = false;
    } else if (c === quote) inString = true;
    else if (c === openBrace || c === openBracket) {
      if (++depth > maxBodyDepth) throw tooDeep("couldn't get version/kind; json parse error: ");
    } else if (c === closeBrace || c === closeBracket) depth--;
  }
}

/**
 * Refuses YAML nested deeper than `maxBodyDepth`, from the tokens of the `yaml` lexer (which does not
 * recurse, and knows quoted and block scalars and comments). Flow collections are counted exactly; block
 * nesting is over-estimated as the indentation levels open on a line plus the `-`, `?` and `:` indicators
 * on it — never less than the real depth, so nothing deep slips past.
 */
export function checkYamlDepth(text: string): void {
  let flow = 0;
  const indents: number[] = [];
  let lineStart = true;
  let indicators = 0;
  for (const token of new Lexer().lex(text)) {
    const type = CST.tokenType(token);
    if (type === 'newline') {
      lineStart = true;
      indicators = 0;
      continue;
    }
    if (lineStart && flow === 0) {
      const indent = type === 'space' ? token.length - token.trimStart().length : 0;
      while (indents.length > 0 && indents[indents.length - 1]! > indent) indents.pop();
      if (indents.length === 0 || indents[indents.length - 1]! < indent) indents.push(indent);
    }
    lineStart = false;
    if (type === 'flow-map-start' || type === 'flow-seq-start') flow++;
    else if (type === 'flow-map-end' || type === 'flow-seq-end') flow = Math.max(0, flow - 1);
    else if (
      flow === 0 &&
      (type === 'seq-item-ind' || type === 'explicit-key-ind' || type === 'map-value-ind')
    )
      indicators++;
    else continue;
    if (flow + indents.length + indicators > maxBodyDepth) throw tooDeep('error converting YAML to JSON: ');
  }
}

/**
 * Refuses a parsed value nested deeper than `maxBodyDepth`, walking it without recursion: YAML aliases
 * can make a value deeper than its text.
 */
export function checkParsedDepth(value: unknown): void {
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (depth > maxBodyDepth) throw tooDeep('');
    for (const child of Object.values(v)) stack.push([child, depth + 1]);
  }
}
