/** How the server writes an answer: JSON or YAML, and objects and lists as Table or PartialObjectMetadata. */
import type { ServerResponse } from 'node:http';
import { stringify as toYaml } from 'yaml';
import type { Clock } from '@nodelet/kernel';
import type { KubeObject } from '../object.js';
import { parseIncludeObject, toPartial, toPartialList, toTable, type Representation } from './negotiation.js';
import { apiVersionOf, type ResourceType } from './resource-type.js';

export function send(
  res: ServerResponse,
  code: number,
  body: unknown,
  representation: Representation = { kind: 'json' },
  warnings: string[] = [],
): void {
  const headers: Record<string, string | string[]> = {};
  if (warnings.length) headers.warning = warnings.map((w) => `299 - ${JSON.stringify(w)}`);
  if (representation.kind === 'yaml') {
    headers['content-type'] = 'application/yaml';
    res.writeHead(code, headers).end(toYaml(body));
    return;
  }
  headers['content-type'] = 'application/json';
  res.writeHead(code, headers).end(typeof body === 'string' ? body : JSON.stringify(body));
}

export function sendObject(
  clock: Clock,
  res: ServerResponse,
  code: number,
  t: ResourceType,
  object: KubeObject,
  representation: Representation,
  q: URLSearchParams,
  warnings: string[] = [],
): void {
  switch (representation.kind) {
    case 'table':
      return send(
        res,
        code,
        toTable(
          t,
          [object],
          { resourceVersion: object.metadata.resourceVersion ?? '' },
          {
            now: clock.now(),
            include: parseIncludeObject(q.get('includeObject')),
            version: representation.version,
            apiVersion: apiVersionOf(t),
          },
        ),
        { kind: 'json' },
        warnings,
      );
    case 'metadata':
      return send(res, code, toPartial(object, representation.version), { kind: 'json' }, warnings);
    default:
      return send(res, code, object, representation, warnings);
  }
}

export function sendList(
  clock: Clock,
  res: ServerResponse,
  t: ResourceType,
  list: KubeObject,
  representation: Representation,
  q: URLSearchParams,
): void {
  const items = list.items as KubeObject[];
  switch (representation.kind) {
    case 'table':
      return send(
        res,
        200,
        toTable(t, items, list.metadata, {
          now: clock.now(),
          include: parseIncludeObject(q.get('includeObject')),
          version: representation.version,
          apiVersion: apiVersionOf(t),
        }),
      );
    case 'metadata':
      return send(res, 200, toPartialList(items, list.metadata, representation.version));
    default:
      return send(res, 200, list, representation);
  }
}
