import { readFileSync } from 'node:fs';
import {
  type ClientRequest,
  Agent as HttpAgent,
  type IncomingMessage,
  request as httpRequest,
} from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest, type RequestOptions } from 'node:https';
import type { Clock } from '@nodelet/kernel';
import { resourceOf, toApiError } from './api-errors.js';
import { getList } from './http-get.js';
import type {
  ListOptions,
  ListWatchApi,
  ObjectList,
  WatchEvent,
  WatchHandle,
  WatchOptions,
} from './kube-api.js';
import { TokenBucket } from './rate-limiter.js';
import type { RestConfig } from './rest-config.js';

export interface HttpsListWatchOptions {
  clock: Clock;
  /** Client-side rate limit (upstream 50 QPS / burst 100). */
  qps?: number;
  burst?: number;
  /** Per-list timeout; an API server that does not answer in time is `code 0`. Default 10 s. */
  requestTimeoutMs?: number;
  /** Server-side watch timeout when the caller gives none. Default 300 s. */
  watchTimeoutSeconds?: number;
}

/**
 * `ListWatchApi` over node's own HTTPS client, for a component that only lists and watches (the proxy):
 * it never loads @kubernetes/client-node. Lists are parsed once from one buffer; a watch is one long GET
 * whose newline-separated JSON events are handed on as they arrive; both go through one keep-alive agent
 * with the kubeconfig's TLS credentials, after a token of the rate limiter, lists with a deadline on the
 * clock. Errors are `ApiError`s as `ClientNodeApi`'s are: a Status body keeps its reason and message.
 */
export class HttpsListWatchApi implements ListWatchApi {
  readonly server: string;
  private readonly base: string;
  private readonly agent: HttpAgent;
  private readonly limiter: TokenBucket;
  private readonly timeoutMs: number;
  private readonly request: typeof httpsRequest;

  constructor(
    private readonly config: RestConfig,
    private readonly options: HttpsListWatchOptions,
  ) {
    this.server = config.server;
    this.base = config.server.replace(/\/$/, '');
    const plain = new URL(config.server).protocol === 'http:';
    this.request = plain ? httpRequest : httpsRequest;
    this.agent = plain
      ? new HttpAgent({ keepAlive: true, maxSockets: 16 })
      : new HttpsAgent({
          keepAlive: true,
          maxSockets: 16,
          rejectUnauthorized: !config.insecureSkipTLSVerify,
          ...(config.ca ? { ca: config.ca } : {}),
          ...(config.cert ? { cert: config.cert } : {}),
          ...(config.key ? { key: config.key } : {}),
          ...(config.tlsServerName ? { servername: config.tlsServerName } : {}),
        });
    this.limiter = new TokenBucket(options.clock, options.qps ?? 50, options.burst ?? 100);
    this.timeoutMs = options.requestTimeoutMs ?? 10_000;
  }

  /** Releases requests waiting for the rate limiter and closes idle connections (shutdown). */
  close(): void {
    this.limiter.close();
    this.agent.destroy();
  }

  async list<T>(path: string, options: ListOptions = {}): Promise<ObjectList<T>> {
    await this.limiter.take();
    return getList<T>(this.options.clock, this.timeoutMs, this.server, this.url(path, options), () =>
      this.requestOptions(),
    );
  }

  watch<T>(path: string, options: WatchOptions, onEvent: (e: WatchEvent<T>) => void): WatchHandle {
    const what = `watch ${resourceOf(path)}`;
    let req: ClientRequest | undefined;
    let response: IncomingMessage | undefined;
    let stopped = false;
    let ended = false;
    let resolveDone!: (err: unknown) => void;
    const done = new Promise<unknown>((resolve) => (resolveDone = resolve));
    const finish = (err: unknown) => {
      ended = true;
      resolveDone(err);
    };
    const fail = (err: unknown) => finish(stopped ? undefined : toApiError(err, this.server, what));
    const url = this.url(path, options, {
      watch: 'true',
      resourceVersion: options.resourceVersion,
      allowWatchBookmarks: 'true',
      timeoutSeconds: String(options.timeoutSeconds ?? this.options.watchTimeoutSeconds ?? 300),
    });
    void this.limiter.take().then(() => {
      if (stopped) return finish(undefined);
      req = this.request(url, this.requestOptions(), (res) => {
        response = res;
        if (res.statusCode !== 200) return readBody(res, (body) => fail({ code: res.statusCode ?? 0, body }));
        readLines(res, (line) => {
          let event: WatchEvent<T>;
          try {
            event = JSON.parse(line) as WatchEvent<T>;
          } catch {
            return; // as client-node: a line that is not JSON is skipped
          }
          if (!stopped) onEvent({ type: event.type, object: event.object });
        });
        res.on('error', fail);
        res.on('close', () => finish(undefined));
      });
      // A watch may sit silent for minutes between events: TCP keep-alive notices a vanished server.
      req.on('socket', (socket) => socket.setKeepAlive(true, 30_000));
      req.on('error', fail);
      req.end();
    });
    return {
      stop: () => {
        stopped = true;
        // Only a watch still open is cut: once its response is complete (events may still be being
        // handed on), its keep-alive socket may already serve another request.
        if (!ended && !response?.complete) req?.destroy();
        finish(undefined);
      },
      done,
    };
  }

  private url(path: string, selectors: ListOptions, extra: Record<string, string> = {}): URL {
    const url = new URL(this.base + path);
    if (selectors.labelSelector) url.searchParams.set('labelSelector', selectors.labelSelector);
    if (selectors.fieldSelector) url.searchParams.set('fieldSelector', selectors.fieldSelector);
    for (const [k, v] of Object.entries(extra)) url.searchParams.set(k, v);
    return url;
  }

  private requestOptions(): RequestOptions {
    const c = this.config;
    const headers: Record<string, string> = { accept: 'application/json', 'user-agent': 'nodelet' };
    const token = c.tokenFile ? readFileSync(c.tokenFile, 'utf8').trim() : c.token;
    if (token) headers.authorization = `Bearer ${token}`;
    else if (c.username !== undefined && c.password !== undefined)
      headers.authorization = `Basic ${Buffer.from(`${c.username}:${c.password}`).toString('base64')}`;
    return { agent: this.agent, headers };
  }
}

function readBody(res: IncomingMessage, then: (body: string) => void): void {
  const chunks: Buffer[] = [];
  res.on('data', (chunk: Buffer) => chunks.push(chunk));
  res.on('end', () => then(Buffer.concat(chunks).toString('utf8')));
}

/** Calls `onLine` for each non-empty line of a response, as its chunks arrive. */
function readLines(res: IncomingMessage, onLine: (line: string) => void): void {
  res.setEncoding('utf8');
  let pending = '';
  res.on('data', (chunk: string) => {
    pending += chunk;
    let start = 0;
    for (let end = pending.indexOf('\n'); end >= 0; end = pending.indexOf('\n', start)) {
      const line = pending.slice(start, end);
      start = end + 1;
      if (line.trim()) onLine(line);
    }
    pending = pending.slice(start);
  });
  res.on('end', () => {
    if (pending.trim()) onLine(pending);
  });
}
