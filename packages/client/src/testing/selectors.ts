/**
 * Label and field selectors as the API server reads them, for the fake: comma-separated terms, each
 * `key`, `!key`, `key=value`, `key==value` or `key!=value` (field selectors: `key=value` and
 * `key!=value` on dotted paths such as `spec.nodeName`, `metadata.name`).
 */

type Term = { key: string; op: 'exists' | 'absent' | 'eq' | 'ne'; value: string };

function parse(selector: string | undefined): Term[] {
  const terms: Term[] = [];
  for (const raw of (selector ?? '').split(',')) {
    const term = raw.trim();
    if (!term) continue;
    const ne = term.indexOf('!=');
    const eq = term.indexOf('=');
    if (ne > 0) terms.push({ key: term.slice(0, ne), op: 'ne', value: term.slice(ne + 2) });
    else if (eq > 0)
      terms.push({ key: term.slice(0, eq), op: 'eq', value: term.slice(eq + 1).replace(/^=/, '') });
    else if (term.startsWith('!')) terms.push({ key: term.slice(1), op: 'absent', value: '' });
    else terms.push({ key: term, op: 'exists', value: '' });
  }
  return terms;
}

function holds(term: Term, value: string | undefined): boolean {
  switch (term.op) {
    case 'exists':
      return value !== undefined;
    case 'absent':
      return value === undefined;
    case 'eq':
      return (value ?? '') === term.value;
    case 'ne':
      return (value ?? '') !== term.value;
  }
}

/** A predicate for objects matching both selectors (unset selectors match everything). */
export function selectorMatcher(options: {
  labelSelector?: string;
  fieldSelector?: string;
}): (obj: any) => boolean {
  const labels = parse(options.labelSelector);
  const fields = parse(options.fieldSelector);
  return (obj) =>
    labels.every((t) => holds(t, obj?.metadata?.labels?.[t.key])) &&
    fields.every((t) => holds(t, fieldOf(obj, t.key)));
}

function fieldOf(obj: any, path: string): string | undefined {
  let v = obj;
  for (const part of path.split('.')) v = v?.[part];
  return v === undefined || v === null ? undefined : String(v);
}
