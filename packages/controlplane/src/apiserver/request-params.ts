/** What a request carries: the resource it names, its body (bounded) and its query parameters. */
import type { IncomingMessage } from 'node:http';
import { isObject } from '../object.js';
import { parseBody } from './decode.js';
import type { DeleteOptions } from './registry.js';
import type { ResourceType } from './resource-type.js';
import { badRequest, tooLarge } from './status.js';

export interface ResourceRequest {
  type: ResourceType;
  namespace: string | undefined;
  name: string | undefined;
  subresource: string | undefined;
  watchPath: boolean;
}

/** Bodies read so far, for the audit log's requestObject (gone with their request). */
const bodies = new WeakMap<IncomingMessage, Buffer>();

/** The body a handler read from `req`, if it read one. */
export function bodyRead(req: IncomingMessage): Buffer | undefined {
  return bodies.get(req);
}

export async function readBody(req: IncomingMessage, maxBodyBytes: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > maxBodyBytes) {
    drain(req);
    throw tooLarge(maxBodyBytes);
  }
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > maxBodyBytes) {
      drain(req);
      throw tooLarge(maxBodyBytes);
    }
    chunks.push(chunk as Buffer);
  }
  const body = Buffer.concat(chunks);
  bodies.set(req, body);
  return body;
}

/** Reads and discards the rest of a refused body (up to a bound), so the client sees the answer. */
export function drain(req: IncomingMessage): void {
  let left = 64 * 1024 * 1024;
  req.on('data', (chunk: Buffer) => {
    left -= chunk.length;
    if (left < 0) req.destroy();
  });
  req.resume();
}

export function optional<K extends string>(key: K, value: number | undefined): { [P in K]?: number } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: number };
}

export function intParam(q: URLSearchParams, name: string): number | undefined {
  const v = q.get(name);
  if (v === null || v === '') return undefined;
  if (!/^-?\d+$/.test(v)) throw badRequest(`${name}: Invalid value: "${v}": must be an integer`);
  // Past 2^53 a number is no longer exact (and SQLite refuses what it became).
  const n = Number(v);
  if (!Number.isSafeInteger(n)) throw badRequest(`${name}: Invalid value: "${v}": integer out of range`);
  return n;
}

export function boolParam(q: URLSearchParams, name: string): boolean {
  const v = q.get(name);
  return v === 'true' || v === '1' || v === 'True';
}

const policies = ['Foreground', 'Background', 'Orphan'];

export function deleteOptions(raw: Buffer, req: IncomingMessage, q: URLSearchParams): DeleteOptions {
  let body: Record<string, any> = {};
  if (raw.length > 0) {
    const parsed = parseBody(raw, req.headers['content-type']);
    if (!isObject(parsed)) throw badRequest('the body of a delete must be a DeleteOptions object');
    body = parsed;
  }
  const grace =
    intParam(q, 'gracePeriodSeconds') ??
    (typeof body.gracePeriodSeconds === 'number' ? body.gracePeriodSeconds : undefined);
  const pre = isObject(body.preconditions) ? body.preconditions : undefined;
  const policy =
    q.get('propagationPolicy') ??
    body.propagationPolicy ??
    (body.orphanDependents === true || q.get('orphanDependents') === 'true' ? 'Orphan' : undefined);
  if (policy !== undefined && !policies.includes(policy)) {
    throw badRequest(
      `propagationPolicy: Unsupported value: ${JSON.stringify(policy)}: supported values: "Foreground", "Background", "Orphan"`,
    );
  }
  return {
    propagationPolicy: policy,
    gracePeriodSeconds: grace,
    preconditions: pre
      ? { uid: pre.uid ?? undefined, resourceVersion: pre.resourceVersion ?? undefined }
      : undefined,
    dryRun: Array.isArray(body.dryRun) && body.dryRun.includes('All'),
  };
}
