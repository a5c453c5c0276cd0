import { badRequest } from './status.js';

/**
 * Label and field selectors, with the syntax of k8s.io/apimachinery/pkg/labels and pkg/fields:
 *
 *   labels   env=prod, tier!=web, env in (a,b), env notin (c), has-key, !no-key, replicas>2, age<5
 *   fields   spec.nodeName=node-1, status.phase!=Failed (`==` is `=`; `\,` `\=` `\\` escape)
 *
 * A selector is parsed once per request into requirements and matched against each object.
 */
export type LabelOperator = 'in' | 'notin' | 'exists' | '!exists' | '=' | '!=' | 'gt' | 'lt';

export interface LabelRequirement {
  key: string;
  op: LabelOperator;
  values: string[];
}

export type LabelSelector = LabelRequirement[];

export function parseLabelSelector(text: string | undefined): LabelSelector {
  if (!text || !text.trim()) return [];
  const out: LabelRequirement[] = [];
  for (const part of splitTopLevel(text)) {
    const s = part.trim();
    if (!s) continue;
    let m: RegExpExecArray | null;
    if ((m = /^!\s*([^\s!=<>(),]+)$/.exec(s))) out.push({ key: m[1]!, op: '!exists', values: [] });
    else if ((m = /^([^\s!=<>(),]+)\s+(in|notin)\s*\(([^)]*)\)$/.exec(s))) {
      const values = m[3]!
        .split(',')
        .map((v) => v.trim())
        .filter((v, _i, all) => v !== '' || all.length === 1);
      out.push({ key: m[1]!, op: m[2] as 'in' | 'notin', values });
    } else if ((m = /^([^\s!=<>(),]+)\s*(==|=|!=|>|<)\s*([^\s!=<>(),]*)$/.exec(s))) {
      const op = m[2] === '>' ? 'gt' : m[2] === '<' ? 'lt' : m[2] === '!=' ? '!=' : '=';
      if ((op === 'gt' || op === 'lt') && !/^-?\d+$/.test(m[3]!)) {
        throw badRequest(
          `unable to parse requirement: for 'Gt', 'Lt' operators, the value must be an integer`,
        );
      }
      out.push({ key: m[1]!, op, values: [m[3]!] });
    } else if ((m = /^([^\s!=<>(),]+)$/.exec(s))) out.push({ key: m[1]!, op: 'exists', values: [] });
    else throw badRequest(`unable to parse requirement: found '${s}', expected: label selector requirement`);
  }
  return out;
}

/** Splits on commas outside parentheses. */
function splitTopLevel(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === ',' && depth === 0) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(text.slice(start));
  return parts;
}

export function matchLabels(selector: LabelSelector, labels: Record<string, string> | undefined): boolean {
  const l = labels ?? {};
  for (const r of selector) {
    const has = Object.hasOwn(l, r.key);
    const v = l[r.key];
    switch (r.op) {
      case 'exists':
        if (!has) return false;
        break;
      case '!exists':
        if (has) return false;
        break;
      case '=':
      case 'in':
        if (!has || !r.values.includes(v!)) return false;
        break;
      case '!=':
      case 'notin':
        if (has && r.values.includes(v!)) return false;
        break;
      case 'gt':
      case 'lt': {
        if (!has || !/^-?\d+$/.test(v!)) return false;
        const n = Number(v);
        const bound = Number(r.values[0]);
        if (r.op === 'gt' ? !(n > bound) : !(n < bound)) return false;
        break;
      }
    }
  }
  return true;
}

/** A structured selector (`matchLabels` + `matchExpressions`, as in a Service or a LabelSelector). */
export function labelSelectorFromObject(selector: {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}): LabelSelector {
  const out: LabelRequirement[] = [];
  for (const [key, value] of Object.entries(selector.matchLabels ?? {}))
    out.push({ key, op: '=', values: [value] });
  for (const e of selector.matchExpressions ?? []) {
    const op = ({ In: 'in', NotIn: 'notin', Exists: 'exists', DoesNotExist: '!exists' } as const)[
      e.operator as 'In' | 'NotIn' | 'Exists' | 'DoesNotExist'
    ];
    if (op) out.push({ key: e.key, op, values: e.values ?? [] });
  }
  return out;
}

export interface FieldRequirement {
  field: string;
  op: '=' | '!=';
  value: string;
}

export type FieldSelector = FieldRequirement[];

export function parseFieldSelector(text: string | undefined): FieldSelector {
  if (!text || !text.trim()) return [];
  const out: FieldRequirement[] = [];
  for (const part of splitEscaped(text, ',')) {
    if (!part.trim()) continue;
    const m = /^([^=!]+?)(==|=|!=)(.*)$/s.exec(part);
    if (!m) throw badRequest(`invalid selector: '${text}'; can't understand '${part}'`);
    out.push({ field: m[1]!.trim(), op: m[2] === '!=' ? '!=' : '=', value: unescapeValue(m[3]!) });
  }
  return out;
}

/** Splits on `sep` not preceded by a backslash escape. */
function splitEscaped(text: string, sep: string): string[] {
  const parts: string[] = [];
  let cur = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '\\' && i + 1 < text.length) {
      cur += c + text[i + 1];
      i++;
    } else if (c === sep) {
      parts.push(cur);
      cur = '';
    } else cur += c;
  }
  parts.push(cur);
  return parts;
}

function unescapeValue(value: string): string {
  return value.replace(/\\(.)/g, '$1');
}

/** Field values of an object, by selector field name. */
export type FieldGetter = (obj: any) => string | undefined;

export function matchFields(selector: FieldSelector, fields: (field: string) => string | undefined): boolean {
  for (const r of selector) {
    const v = fields(r.field) ?? '';
    if (r.op === '=' ? v !== r.value : v === r.value) return false;
  }
  return true;
}

/** The single value a selector requires of `field` (`metadata.name=x` → x), if any. */
export function requiredFieldValue(selector: FieldSelector, field: string): string | undefined {
  return selector.find((r) => r.field === field && r.op === '=')?.value;
}
