import { rejectUpgrade } from '@nodelet/streaming';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { errorMessage, type Logger } from '@nodelet/kernel';

/** Who made a request, as the authenticator decided (absent on the read-only port). */
export interface RequestUser {
  name: string;
  uid?: string;
  groups: string[];
  extra?: Record<string, string[]>;
}

/** What a handler learns of its request beyond `req`. */
export interface RouteParams {
  /** The raw path, without the query. */
  path: string;
  /** The path's segments after the leading `/`, percent-decoded. */
  segments: string[];
  query: URLSearchParams;
  user?: RequestUser;
}

export type RouteHandler = (
  req: IncomingMessage,
  res: ServerResponse,
  params: RouteParams,
) => void | Promise<void>;
export type UpgradeHandler = (
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  params: RouteParams,
) => void | Promise<void>;

export interface Route {
  /** Methods served (default GET and HEAD); any other is 405. */
  methods?: string[];
  /** An exact path, or a prefix when it ends with `/` (then the prefix without its `/` matches too). */
  path: string;
  handler: RouteHandler;
  /** Also served on the read-only port (upstream: healthz, pods, spec, stats, metrics). */
  readOnly?: boolean;
}

interface UpgradeRoute {
  prefix: string;
  handler: UpgradeHandler;
}

/**
 * The kubelet server's route table. Parts of the kubelet register their endpoints here (logs, stats,
 * metrics, streaming); the secure and read-only servers dispatch through it after their own checks.
 * Longest match wins. No handler can take the process down: a throw or rejection is a 500 with its
 * message, a malformed percent-escape is a 400 before any handler runs.
 */
export class RouteTable {
  private readonly routes: Route[] = [];
  private readonly upgrades: UpgradeRoute[] = [];

  constructor(private readonly logger: Logger) {}

  /** Registers (or replaces: same path, the newest wins) an endpoint. */
  addRoute(route: Route): void {
    const at = this.routes.findIndex((r) => r.path === route.path);
    if (at >= 0) this.routes.splice(at, 1);
    this.routes.push(route);
  }

  /** Registers the handler of HTTP upgrades (WebSocket, SPDY) under `prefix` (exec, attach, portForward). */
  addUpgradeRoute(prefix: string, handler: UpgradeHandler): void {
    const at = this.upgrades.findIndex((r) => r.prefix === prefix);
    if (at >= 0) this.upgrades.splice(at, 1);
    this.upgrades.push({ prefix, handler });
  }

  /**
   * The route that serves `path`, if any: an exact path first, else the longest prefix; `readOnly`
   * limits the search to the read-only set.
   */
  find(path: string, readOnly = false): Route | undefined {
    let best: Route | undefined;
    for (const route of this.routes) {
      if (readOnly && !route.readOnly) continue;
      if (route.path === path) return route;
      if (!matches(route.path, path)) continue;
      if (!best || route.path.length > best.path.length) best = route;
    }
    return best;
  }

  findUpgrade(path: string): UpgradeRoute | undefined {
    let best: UpgradeRoute | undefined;
    for (const route of this.upgrades) {
      if (!matches(route.prefix, path)) continue;
      if (!best || route.prefix.length > best.prefix.length) best = route;
    }
    return best;
  }

  /** Serves one request with the route found for it (404 when none; 405 for a method it does not take). */
  async serve(req: IncomingMessage, res: ServerResponse, params: RouteParams, route: Route | undefined) {
    if (!route) return sendText(res, 404, '404 page not found\n');
    const methods = route.methods ?? ['GET', 'HEAD'];
    if (!methods.includes(req.method ?? '')) {
      res.setHeader('allow', methods.join(', '));
      return sendText(
        res,
        405,
        `method ${req.method} is not allowed on ${params.path}; allowed: ${methods.join(', ')}\n`,
      );
    }
    await guarded(this.logger, res, params.path, () => route.handler(req, res, params));
  }

  async serveUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, params: RouteParams): Promise<void> {
    const route = this.findUpgrade(params.path);
    if (!route) return rejectUpgrade(socket, 404, '404 page not found\n');
    try {
      await route.handler(req, socket, head, params);
    } catch (err) {
      this.logger.warn('upgrade request failed', { path: params.path, err: errorMessage(err) });
      rejectUpgrade(socket, 500, `${errorMessage(err)}\n`);
    }
  }
}

/** Whether a route's path (exact, or a prefix ending in `/`) serves `path`. */
export function matches(routePath: string, path: string): boolean {
  if (!routePath.endsWith('/') || routePath === '/') return path === routePath;
  return path === routePath.slice(0, -1) || path.startsWith(routePath);
}

/**
 * The request's path, segments and query; undefined when the path has a malformed percent-escape
 * (decodeURIComponent throws URIError: it once ended the kubelet).
 */
export function parseRequestUrl(url: string | undefined): {
  path: string;
  segments?: string[];
  query: URLSearchParams;
} {
  const raw = url ?? '/';
  const at = raw.indexOf('?');
  const path = at < 0 ? raw : raw.slice(0, at);
  let query: URLSearchParams;
  try {
    query = new URLSearchParams(at < 0 ? '' : raw.slice(at + 1));
  } catch {
    query = new URLSearchParams();
  }
  return { path, segments: pathSegments(path), query };
}

/** The path's segments after the leading `/`, percent-decoded; undefined when an escape is malformed. */
export function pathSegments(path: string): string[] | undefined {
  try {
    return path.split('/').slice(1).map(decodeURIComponent);
  } catch {
    return undefined;
  }
}

export function badEscape(path: string): string {
  return `malformed percent-escape in the path ${JSON.stringify(path)}\n`;
}

/** A plain-text answer (the body is written as is; a HEAD gets the headers only). */
export function sendText(
  res: ServerResponse,
  status: number,
  body: string,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', ...headers });
  res.end(res.req?.method === 'HEAD' ? undefined : body);
}

export function sendJson(res: ServerResponse, status: number, value: unknown): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(res.req?.method === 'HEAD' ? undefined : JSON.stringify(value));
}

/** Runs a handler so that nothing it throws or rejects escapes: a 500 with the message instead. */
export async function guarded(
  logger: Logger,
  res: ServerResponse,
  path: string,
  run: () => void | Promise<void>,
) {
  try {
    await run();
  } catch (err) {
    logger.warn('request failed', { path, err: errorMessage(err) });
    if (res.headersSent) res.destroy();
    else sendText(res, 500, `${errorMessage(err)}\n`);
  }
}
