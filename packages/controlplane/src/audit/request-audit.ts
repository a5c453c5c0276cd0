import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Clock } from '@nodelet/kernel';
import type { RequestAttributes } from '../authorization/attributes.js';
import {
  auditUser,
  inSchemaOrder,
  loggedObject,
  microTime,
  objectReference,
  responseStatus,
  type AuditEvent,
} from './event.js';
import { requestAttributes } from '../authorization/request-info.js';
import { evaluatePolicy, type AuditPolicy, type AuditStage, type RequestAuditConfig } from './policy.js';

export interface AuditSink {
  write(event: AuditEvent): void;
}

/** Subresources served as long-running streams: their response starts long before it completes. */
const longRunningSubresources = new Set(['exec', 'attach', 'portforward', 'proxy', 'log']);
/** A response body larger than this is not copied into a RequestResponse event. */
const maxLoggedResponseBytes = 4 * 1024 * 1024;

/**
 * The audit log's view of requests (upstream's WithAudit filter): the policy decides each request's
 * level; the events of its stages go to the sink. `bodyOf` gives the request body once a handler has
 * read it, for Request and RequestResponse levels.
 */
export class Auditor {
  constructor(
    private readonly options: {
      policy: AuditPolicy;
      sink: AuditSink;
      clock: Clock;
      bodyOf: (req: IncomingMessage) => Buffer | undefined;
    },
  ) {}

  /**
   * Starts auditing a request: logs RequestReceived and follows the response to its end (ResponseStarted
   * for long-running requests, then ResponseComplete). Undefined when the policy's level is None.
   */
  begin(req: IncomingMessage, res: ServerResponse, attrs: RequestAttributes): RequestAudit | undefined {
    const config = evaluatePolicy(this.options.policy, attrs);
    if (config.level === 'None') return undefined;
    const audit = new RequestAudit(this.options, config, req, res, attrs);
    audit.emit('RequestReceived');
    return audit;
  }

  /**
   * A request whose credentials were refused (upstream's failed-authentication audit): one
   * ResponseStarted event with its 401, at the level the policy gives a request of no user.
   */
  failedAuthentication(req: IncomingMessage, res: ServerResponse, url: URL): void {
    const attrs = requestAttributes({ name: '', groups: [] }, req.method ?? 'GET', url);
    const config = evaluatePolicy(this.options.policy, attrs);
    if (config.level === 'None') return;
    new RequestAudit(this.options, config, req, res, attrs).unauthenticated(attemptedMethods(req));
  }
}

export class RequestAudit {
  private readonly event: AuditEvent;
  private readonly responseChunks: Buffer[] = [];
  private responseBytes = 0;
  private responseStarted = false;
  private capturing = false;
  private completed = false;

  constructor(
    private readonly options: {
      sink: AuditSink;
      clock: Clock;
      bodyOf: (req: IncomingMessage) => Buffer | undefined;
    },
    private readonly config: RequestAuditConfig,
    private readonly req: IncomingMessage,
    private readonly res: ServerResponse,
    attrs: RequestAttributes,
  ) {
    const header = req.headers['audit-id'];
    const auditID = (typeof header === 'string' && header) || randomUUID();
    if (!res.headersSent) res.setHeader('Audit-Id', auditID);
    const received = microTime(options.clock.now());
    const objectRef = objectReference(attrs);
    const userAgent = req.headers['user-agent'];
    this.event = {
      kind: 'Event',
      apiVersion: 'audit.k8s.io/v1',
      level: config.level,
      auditID,
      stage: 'RequestReceived',
      requestURI: req.url ?? '/',
      verb: attrs.verb,
      user: auditUser(attrs.user),
      sourceIPs: sourceIPs(req),
      ...(userAgent ? { userAgent } : {}),
      ...(objectRef ? { objectRef } : {}),
      requestReceivedTimestamp: received,
      stageTimestamp: received,
    };
    const longRunning = attrs.verb === 'watch' || longRunningSubresources.has(attrs.subresource);
    this.follow(longRunning);
  }

  /** The authorizer's decision and reason, as the `authorization.k8s.io/*` annotations. */
  authorized(decision: 'allow' | 'forbid', reason: string): void {
    this.event.annotations = {
      ...this.event.annotations,
      'authorization.k8s.io/decision': decision,
      'authorization.k8s.io/reason': reason,
    };
  }

  /** The single event of a request whose credentials were refused. */
  unauthenticated(attempted: string[]): void {
    this.completed = true;
    this.event.user = {};
    const message = attempted.length
      ? `Authentication failed, attempted: ${attempted.join(', ')}`
      : 'Authentication failed, no credentials provided';
    this.event.responseStatus = { metadata: {}, message, code: 401 };
    this.emit('ResponseStarted');
  }

  /** Logs the Panic stage: the handler failed without an answer. */
  panicked(message: string): void {
    if (this.completed) return;
    this.completed = true;
    this.event.responseStatus = { metadata: {}, status: 'Failure', message, code: 500 };
    this.emit('Panic');
  }

  emit(stage: AuditStage): void {
    if (this.config.omitStages.includes(stage)) return;
    const stageTimestamp = microTime(this.options.clock.now());
    this.options.sink.write(inSchemaOrder({ ...this.event, stage, stageTimestamp }));
  }

  private follow(longRunning: boolean): void {
    const res = this.res;
    const writeHead = res.writeHead.bind(res) as (...args: unknown[]) => ServerResponse;
    res.writeHead = ((...args: unknown[]) => {
      const result = writeHead(...args);
      // The body is kept for a RequestResponse event, and for an error's Status at every level.
      this.capturing = !longRunning && (this.config.level === 'RequestResponse' || res.statusCode >= 300);
      if (longRunning && !this.responseStarted) {
        this.responseStarted = true;
        this.event.responseStatus = responseStatus(res.statusCode);
        this.emit('ResponseStarted');
      }
      return result;
    }) as typeof res.writeHead;
    if (!longRunning) {
      const write = res.write.bind(res) as (...args: unknown[]) => boolean;
      const end = res.end.bind(res) as (...args: unknown[]) => ServerResponse;
      res.write = ((chunk: unknown, ...rest: unknown[]) => {
        this.capture(chunk);
        return write(chunk, ...rest);
      }) as typeof res.write;
      res.end = ((chunk?: unknown, ...rest: unknown[]) => {
        if (typeof chunk !== 'function') this.capture(chunk);
        return end(chunk, ...rest);
      }) as typeof res.end;
    }
    // Also logged when the client goes away first: the request did complete, as far as the server goes.
    res.once('close', () => this.complete());
  }

  private capture(chunk: unknown): void {
    if (!this.capturing || chunk === undefined || chunk === null) return;
    if (this.responseBytes > maxLoggedResponseBytes) return;
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.isBuffer(chunk) ? chunk : undefined;
    if (!buf) return;
    this.responseBytes += buf.length;
    this.responseChunks.push(buf);
  }

  private complete(): void {
    if (this.completed) return;
    this.completed = true;
    const response = this.responseJson();
    this.event.responseStatus = responseStatus(this.res.statusCode, response);
    const body = this.options.bodyOf(this.req);
    const request = body ? parseJson(body) : undefined;
    // As upstream, the name of the object a create sends completes objectRef at every level.
    const meta = (request as { metadata?: { name?: unknown } } | undefined)?.metadata;
    const ref = this.event.objectRef;
    if (ref && !ref.name && typeof meta?.name === 'string' && meta.name)
      this.event.objectRef = { ...ref, name: meta.name };
    if (
      request !== undefined &&
      (this.config.level === 'Request' || this.config.level === 'RequestResponse')
    ) {
      this.event.requestObject = loggedObject(request, this.config.omitManagedFields);
    }
    if (this.config.level === 'RequestResponse' && response !== undefined) {
      this.event.responseObject = loggedObject(response, this.config.omitManagedFields);
    }
    this.emit('ResponseComplete');
  }

  /** The response body when it is JSON (an error's Status is read at every level). */
  private responseJson(): unknown {
    if (this.responseChunks.length === 0 || this.responseBytes > maxLoggedResponseBytes) return undefined;
    if (!String(this.res.getHeader('content-type') ?? '').includes('json')) return undefined;
    return parseJson(Buffer.concat(this.responseChunks));
  }
}

function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
}

/** The kinds of credentials a refused request carried, for the message upstream logs. */
function attemptedMethods(req: IncomingMessage): string[] {
  const methods: string[] = [];
  const auth = (req.headers.authorization ?? '').trim().split(/\s+/);
  if (auth[0]?.toLowerCase() === 'basic') methods.push('basic');
  if (auth.length > 1 && auth[0]!.toLowerCase() === 'bearer') methods.push('bearer');
  const socket = req.socket as { getPeerCertificate?: () => { subject?: unknown } };
  if (socket.getPeerCertificate?.()?.subject) methods.push('x509');
  return methods;
}

/** X-Forwarded-For's addresses, X-Real-Ip, then the peer's address, without repeats (as upstream). */
function sourceIPs(req: IncomingMessage): string[] {
  const ips: string[] = [];
  const forwarded = req.headers['x-forwarded-for'];
  if (typeof forwarded === 'string')
    ips.push(
      ...forwarded
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    );
  const real = req.headers['x-real-ip'];
  if (typeof real === 'string' && real.trim()) ips.push(real.trim());
  const remote = req.socket.remoteAddress?.replace(/^::ffff:/, '');
  if (remote) ips.push(remote);
  return [...new Set(ips)];
}
