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
  parseJson,
  responseStatus,
  type AuditEvent,
} from './event.js';
import { requestAttributes } from '../authorization/request-info.js';
import { evaluatePolicy, type AuditPolicy, type AuditStage, type RequestAuditConfig } from './policy.js';
import { followResponse } from './response-follower.js';

export interface AuditSink {
  write(event: AuditEvent): void;
}

/** Subresources served as long-running streams: their response starts long before it completes. */
const longRunningSubresources = new Set(['exec', 'attach', 'portforward', 'proxy', 'log']);

function isLongRunning(attrs: RequestAttributes): boolean {
  return attrs.verb === 'watch' || longRunningSubresources.has(attrs.subresource);
}

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
    const audit = this.start(req, attrs);
    if (!audit) return undefined;
    if (!res.headersSent) res.setHeader('Audit-Id', audit.auditID);
    followResponse(audit, res, isLongRunning(attrs));
    audit.emit('RequestReceived');
    return audit;
  }

  /**
   * Starts auditing an upgrade (exec, attach, port-forward): logs RequestReceived; the caller reports
   * the response's start (`started`) and end (`finish`), as it owns the connection.
   */
  beginUpgrade(req: IncomingMessage, attrs: RequestAttributes): RequestAudit | undefined {
    const audit = this.start(req, attrs);
    audit?.emit('RequestReceived');
    return audit;
  }

  private start(req: IncomingMessage, attrs: RequestAttributes): RequestAudit | undefined {
    const config = evaluatePolicy(this.options.policy, attrs);
    return config.level === 'None' ? undefined : new RequestAudit(this.options, config, req, attrs);
  }

  /**
   * A request whose credentials were refused (upstream's failed-authentication audit): one
   * ResponseStarted event with its 401, at the level the policy gives a request of no user.
   */
  failedAuthentication(req: IncomingMessage, res: ServerResponse | undefined, url: URL): void {
    let attrs: RequestAttributes;
    try {
      attrs = requestAttributes({ name: '', groups: [] }, req.method ?? 'GET', url);
    } catch {
      return; // a path that cannot be read (a malformed escape) is refused as such, not audited
    }
    const config = evaluatePolicy(this.options.policy, attrs);
    if (config.level === 'None') return;
    const audit = new RequestAudit(this.options, config, req, attrs);
    if (res && !res.headersSent) res.setHeader('Audit-Id', audit.auditID);
    audit.unauthenticated(attemptedMethods(req));
  }
}

/** One audited request: its event, filled in as the request goes, logged at each stage. */
export class RequestAudit {
  private readonly event: AuditEvent;
  private responseStarted = false;
  private completed = false;

  constructor(
    private readonly options: {
      sink: AuditSink;
      clock: Clock;
      bodyOf: (req: IncomingMessage) => Buffer | undefined;
    },
    readonly config: RequestAuditConfig,
    private readonly req: IncomingMessage,
    attrs: RequestAttributes,
  ) {
    const header = req.headers['audit-id'];
    const received = microTime(options.clock.now());
    const objectRef = objectReference(attrs);
    const userAgent = req.headers['user-agent'];
    this.event = {
      kind: 'Event',
      apiVersion: 'audit.k8s.io/v1',
      level: config.level,
      auditID: (typeof header === 'string' && header) || randomUUID(),
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
  }

  get auditID(): string {
    return this.event.auditID;
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

  /** The response of a long-running request began (its headers went out): ResponseStarted. */
  started(code: number): void {
    if (this.responseStarted || this.completed) return;
    this.responseStarted = true;
    this.event.responseStatus = responseStatus(code);
    this.emit('ResponseStarted');
  }

  /** The response ended: ResponseComplete, with the objects the level asks for. */
  finish(code: number, response?: unknown): void {
    if (this.completed) return;
    this.completed = true;
    this.event.responseStatus = responseStatus(code, response);
    const body = this.options.bodyOf(this.req);
    const request = body ? parseJson(body) : undefined;
    // As upstream, the name of the object a create sends completes objectRef at every level.
    const meta = (request as { metadata?: { name?: unknown } } | undefined)?.metadata;
    const ref = this.event.objectRef;
    if (ref && !ref.name && typeof meta?.name === 'string' && meta.name)
      this.event.objectRef = { ...ref, name: meta.name };
    const level = this.config.level;
    if (request !== undefined && (level === 'Request' || level === 'RequestResponse'))
      this.event.requestObject = loggedObject(request, this.config.omitManagedFields);
    if (level === 'RequestResponse' && response !== undefined)
      this.event.responseObject = loggedObject(response, this.config.omitManagedFields);
    this.emit('ResponseComplete');
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
