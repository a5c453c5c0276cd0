/**
 * `$(VAR)` references, as upstream expands them in env values, command, args and subPathExpr
 * (third_party/forked/golang/expansion): `$(NAME)` is the variable's value; `$$` is a literal `$`; a
 * reference to an unknown variable, an unterminated `$(`, and a `$` before anything else stay as
 * written. No other syntax (`${X}`, `$X`, backslashes) means anything.
 */
export type Mapping = (name: string) => string;

/** Looks `name` up in each context in turn; an unknown name stays `$(name)`. */
export function mappingFor(...contexts: ReadonlyMap<string, string>[]): Mapping {
  return (name) => {
    for (const vars of contexts) {
      const value = vars.get(name);
      if (value !== undefined) return value;
    }
    return `$(${name})`;
  };
}

/** `input` with its references replaced; `vars` is a mapping or a map of known variables. */
export function expand(input: string, vars: Mapping | ReadonlyMap<string, string>): string {
  const mapping = typeof vars === 'function' ? vars : mappingFor(vars);
  let out = '';
  let checkpoint = 0;
  for (let cursor = 0; cursor < input.length; cursor++) {
    if (input[cursor] !== '$' || cursor + 1 >= input.length) continue;
    out += input.slice(checkpoint, cursor);
    const { read, isVar, advance } = readReference(input, cursor + 1);
    out += isVar ? mapping(read) : read;
    cursor += advance;
    checkpoint = cursor + 1;
  }
  return out + input.slice(checkpoint);
}

/**
 * What follows a `$` at `at`: an escaped `$`, a `(NAME)` reference (up to the first `)`, whatever is
 * in it), or text to keep; `advance` is how many characters after the `$` it used.
 */
function readReference(input: string, at: number): { read: string; isVar: boolean; advance: number } {
  const next = input[at]!;
  if (next === '$') return { read: '$', isVar: false, advance: 1 };
  if (next === '(') {
    const close = input.indexOf(')', at + 1);
    if (close >= 0) return { read: input.slice(at + 1, close), isVar: true, advance: close - at + 1 };
    // Unterminated: the `$(` stays, and the rest is scanned on.
    return { read: '$(', isVar: false, advance: 1 };
  }
  return { read: '$' + next, isVar: false, advance: 1 };
}
