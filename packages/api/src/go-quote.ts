/**
 * Go's strconv.Quote (`%q`): printable characters as they are, `"` and backslash escaped, control
 * characters as `\n`, `\x00`, …, other non-printable runes as `\u`/`\U` escapes — as upstream's messages
 * and downward-API files quote.
 */
export function goQuote(text: string): string {
  let out = '"';
  for (const ch of text) {
    const code = ch.codePointAt(0)!;
    if (ch === '"' || ch === '\\') out += '\\' + ch;
    else if (code >= 0x20 && code < 0x7f) out += ch;
    else if (goEscapes[ch]) out += goEscapes[ch];
    else if (code < 0x20 || code === 0x7f) out += '\\x' + code.toString(16).padStart(2, '0');
    else if (/[\p{L}\p{M}\p{N}\p{P}\p{S}]/u.test(ch) || ch === ' ') out += ch;
    else if (code <= 0xffff) out += '\\u' + code.toString(16).padStart(4, '0');
    else out += '\\U' + code.toString(16).padStart(8, '0');
  }
  return out + '"';
}

const goEscapes: Record<string, string> = {
  '\x07': '\\a',
  '\b': '\\b',
  '\f': '\\f',
  '\n': '\\n',
  '\r': '\\r',
  '\t': '\\t',
  '\v': '\\v',
};
