import { findSchemaErrors, formatFieldError, type Pod, validatePod } from '@nodelet/api';
import { parseAllDocuments } from 'yaml';

/**
 * The largest manifest file or URL body the kubelet reads: no object can be larger than the API
 * server's request limit (3 MiB / 2 = 1.5 MiB), and reading a bigger one whole would hold the kubelet's
 * memory for nothing. Checked before reading (a file's size, a response's Content-Length) and while reading.
 */
export const MAX_MANIFEST_BYTES = (3 * 1024 * 1024) / 2;

/** Why a manifest of `size` bytes is refused (`what`: the file or URL), naming the limit. */
export function manifestTooLarge(what: string, size: number | string): string {
  return `${what} is ${size} bytes, larger than any object can be: the API server's request limit is 1.5 MiB (${MAX_MANIFEST_BYTES} bytes); split it into smaller manifests`;
}

export interface ParsedManifests {
  /** The pods of the documents that passed every check (defaulted when `defaults` was given). */
  pods: Pod[];
  /** One line per problem, each naming the origin; empty when the whole text is good. */
  errors: string[];
}

export interface ParseManifestOptions {
  /** Applied to each pod before validation, as upstream defaults a decoded pod before it validates it. */
  defaults?: (pod: Pod) => Pod;
}

/**
 * Reads pod manifests: YAML or JSON (JSON is YAML), any number of `---`-separated documents, each a
 * `v1` `Pod` or a `v1` `PodList`. Every problem is reported with the origin (file path or URL) first:
 *
 *     /etc/kubernetes/manifests/web.yaml: not valid YAML (line 7, column 3): …
 *     /etc/kubernetes/manifests/web.yaml: document 2: expected apiVersion "v1" and kind "Pod" or "PodList", …
 *     /etc/kubernetes/manifests/web.yaml: pod "web": spec.containers[0].imagePullPolcy: unknown field
 *
 * Decoding is strict: a field the Kubernetes schema does not have is an error, not silently dropped. A
 * misspelt `imagePullPolcy` or `restartPolcy` would otherwise run the pod with a default its author did
 * not choose, and on a node with no API server in front of it nobody else would notice. (Upstream's file
 * source decodes leniently; `kubectl --validate=strict` and the API server's `fieldValidation=Strict`
 * refuse the same way as this does.)
 *
 * A caller that applies a file as a whole treats any error as a rejection of the whole text; `pods` still
 * lists the good documents for callers that want them.
 */
export function parseManifests(
  text: string,
  origin: string,
  options: ParseManifestOptions = {},
): ParsedManifests {
  const pods: Pod[] = [];
  const errors: string[] = [];
  const documents = parseAllDocuments(text, { prettyErrors: true, uniqueKeys: true });
  const list = Array.isArray(documents) ? documents : [];

  for (const doc of list) {
    for (const e of doc.errors) {
      const pos = e.linePos?.[0];
      const where = pos ? ` (line ${pos.line}, column ${pos.col})` : '';
      const message = (e.message.split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?$/, '');
      errors.push(`${origin}: not valid YAML${where}: ${message}`);
    }
  }
  if (errors.length > 0) return { pods, errors };

  const multi = list.length > 1;
  list.forEach((doc, index) => {
    const value: unknown = doc.toJS({ maxAliasCount: 100 });
    if (value === null || value === undefined) return; // an empty document, e.g. after a trailing `---`
    const where = `document ${index + 1}`;
    if (!isObject(value)) {
      errors.push(`${origin}: ${where}: expected a Pod or PodList object, got ${describe(value)}`);
      return;
    }
    const { apiVersion, kind } = value;
    if (apiVersion === 'v1' && kind === 'Pod') {
      readPod(value, multi ? where : undefined);
    } else if (apiVersion === 'v1' && kind === 'PodList') {
      const items = value.items;
      for (const e of findSchemaErrors({ ...value, items: [] }, 'V1PodList')) {
        errors.push(`${origin}: ${where}: ${formatFieldError(e)}`);
      }
      if (!Array.isArray(items)) return;
      items.forEach((item, i) => {
        const at = `${multi ? `${where}: ` : ''}items[${i}]`;
        if (!isObject(item)) {
          errors.push(`${origin}: ${at}: expected a Pod object, got ${describe(item)}`);
          return;
        }
        if ((item.apiVersion ?? 'v1') !== 'v1' || (item.kind ?? 'Pod') !== 'Pod') {
          errors.push(`${origin}: ${at}: expected apiVersion "v1" and kind "Pod", got ${describeKind(item)}`);
          return;
        }
        readPod(item, at);
      });
    } else {
      errors.push(
        `${origin}: ${where}: expected apiVersion "v1" and kind "Pod" or "PodList", got ${describeKind(value)}`,
      );
    }
  });
  return { pods, errors };

  function readPod(raw: Record<string, unknown>, position: string | undefined): void {
    const name = isObject(raw.metadata) && typeof raw.metadata.name === 'string' ? raw.metadata.name : '';
    const label = name ? `pod ${JSON.stringify(name)}` : (position ?? 'pod');
    const problems = findSchemaErrors(raw, 'V1Pod').map(formatFieldError);
    let pod = raw as Pod;
    try {
      if (options.defaults) pod = options.defaults(pod);
    } catch (err) {
      problems.push(`cannot apply defaults: ${(err as Error).message}`);
    }
    for (const e of validatePod(pod)) {
      const line = formatFieldError(e);
      if (!problems.includes(line)) problems.push(line);
    }
    if (problems.length === 0) pods.push(pod);
    for (const p of problems) errors.push(`${origin}: ${label}: ${p}`);
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function describe(value: unknown): string {
  if (Array.isArray(value)) return 'a list';
  return typeof value === 'string'
    ? `the string ${JSON.stringify(value)}`
    : `${typeof value} ${String(value)}`;
}

function describeKind(value: Record<string, unknown>): string {
  const part = (field: string, v: unknown) =>
    v === undefined ? `no ${field}` : `${field} ${JSON.stringify(v)}`;
  return `${part('apiVersion', value.apiVersion)} and ${part('kind', value.kind)}`;
}
