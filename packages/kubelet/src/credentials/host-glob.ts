/**
 * Go's `path/filepath.Match` on one part of a host name (upstream's keyring globs each dot-separated
 * part: `*.example.com`, `prefix.*.io`, `*-good.example.com`):
 *
 *   `*` any run of characters but `/`; `?` one character but `/`; `[a-z]`, `[^0-9]` classes (ranges,
 *   `\` escapes); `\c` the character c itself.
 *
 * A malformed pattern (`[` not closed, a class starting with `-` or `]`, a trailing `\`) matches
 * nothing, as upstream treats Match's ErrBadPattern.
 */
export function globMatch(pattern: string, name: string): boolean {
  let compiled = cache.get(pattern);
  if (compiled === undefined) {
    compiled = compile(pattern);
    if (cache.size >= 1024) cache.clear();
    cache.set(pattern, compiled);
  }
  return compiled !== null && compiled.test(name);
}

const cache = new Map<string, RegExp | null>();

const literal = (c: string) => `\\u{${c.codePointAt(0)!.toString(16)}}`;

function compile(pattern: string): RegExp | null {
  const chars = [...pattern];
  let source = '';
  let i = 0;
  // One character of a class (Go's getEsc): `-` and `]` must be escaped there.
  const classChar = (): string | null => {
    let c = chars[i];
    if (c === undefined || c === '-' || c === ']') return null;
    if (c === '\\') c = chars[++i];
    if (c === undefined) return null;
    i++;
    return chars[i] === undefined ? null : c; // the class must still be closed
  };
  while (i < chars.length) {
    const c = chars[i]!;
    if (c === '*') {
      source += '[^/]*';
      i++;
    } else if (c === '?') {
      source += '[^/]';
      i++;
    } else if (c === '\\') {
      const next = chars[i + 1];
      if (next === undefined) return null;
      source += literal(next);
      i += 2;
    } else if (c === '[') {
      i++;
      let negated = false;
      if (chars[i] === '^') {
        negated = true;
        i++;
      }
      let ranges = '';
      let count = 0;
      for (;;) {
        if (chars[i] === ']' && count > 0) {
          i++;
          break;
        }
        const lo = classChar();
        if (lo === null) return null;
        let hi = lo;
        if (chars[i] === '-') {
          i++;
          const end = classChar();
          if (end === null) return null;
          hi = end;
        }
        // Go accepts a reversed range; it just matches nothing.
        if (lo.codePointAt(0)! <= hi.codePointAt(0)!) ranges += `${literal(lo)}-${literal(hi)}`;
        count++;
      }
      source += ranges === '' ? (negated ? '[^]' : '[]') : `[${negated ? '^' : ''}${ranges}]`;
    } else {
      source += literal(c);
      i++;
    }
  }
  return new RegExp(`^${source}$`, 'u');
}
