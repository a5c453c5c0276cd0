import { STATUS_CODES } from 'node:http';
import type { Pod } from '@nodelet/api';
import type { Clock, EventBus, Logger } from '@nodelet/kernel';
import { interval, type Observable, ReplaySubject, type Subscription } from 'rxjs';
import { MAX_MANIFEST_BYTES, manifestTooLarge, parseManifests } from './manifest.js';
import type { PodSource } from './source.js';
import { applyStaticPodDefaults } from './static-pod.js';

export interface UrlSourceOptions {
  /** `--manifest-url`. */
  url: string;
  nodeName: string;
  clock: Clock;
  logger: Logger;
  bus?: EventBus;
  /** Request headers (`--manifest-url-header`); a list value sends the header once per item. */
  headers?: Record<string, string | readonly string[]>;
  /** Poll period (upstream `httpCheckFrequency`). Default 20 s. */
  checkFrequencyMs?: number;
  /** Per-request timeout, on the kernel clock. Default 10 s, as upstream's client. */
  timeoutMs?: number;
  /** Largest body read. Default 1.5 MiB, the largest an object can be (MAX_MANIFEST_BYTES). */
  maxBytes?: number;
}

/**
 * The manifest-URL source (upstream's http source). Polls the URL every `checkFrequencyMs`; the body is
 * a Pod, a PodList or several `---`-separated YAML documents. A 200 whose body is unchanged is not parsed
 * again; an empty 200 body means no pods (as upstream).
 *
 * When the URL fails — a connection error, a timeout, a non-2xx status, a body that does not parse or
 * validate — one line is logged naming the URL and the problem, and the pods it last served are kept.
 * The same failure is not logged again until the URL has served successfully in between.
 */
export class UrlSource implements PodSource {
  readonly name = 'http' as const;
  readonly snapshots$: Observable<Pod[]>;

  private readonly subject = new ReplaySubject<Pod[]>(1);
  private readonly period: number;
  private readonly timeoutMs: number;
  private readonly maxBytes: number;
  private current: Pod[] = [];
  private emitted = false;
  private lastBody: string | undefined;
  private lastFailure: string | undefined;
  private subscription: Subscription | undefined;
  private inFlight: Promise<void> | undefined;

  constructor(private readonly options: UrlSourceOptions) {
    this.period = options.checkFrequencyMs ?? 20_000;
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.maxBytes = options.maxBytes ?? MAX_MANIFEST_BYTES;
    this.snapshots$ = this.subject.asObservable();
  }

  start(): void {
    if (this.subscription) return;
    this.subscription = interval(this.period, this.options.clock.scheduler).subscribe(() => void this.poll());
    this.options.logger.info('watching manifest URL', { url: this.options.url, periodMs: this.period });
    void this.poll();
  }

  stop(): void {
    this.subscription?.unsubscribe();
    this.subscription = undefined;
  }

  pods(): Pod[] {
    return this.current;
  }

  originOf(): string {
    return this.options.url;
  }

  /** Fetches the URL now; a poll already under way is joined rather than doubled. */
  poll(): Promise<void> {
    this.inFlight ??= this.fetchOnce().finally(() => (this.inFlight = undefined));
    return this.inFlight;
  }

  private async fetchOnce(): Promise<void> {
    const { url } = this.options;
    let body: string;
    try {
      body = await this.get();
    } catch (err) {
      this.fail(
        err instanceof HttpFailure ? err.message : `manifest URL ${url} could not be read: ${describe(err)}`,
      );
      return;
    }
    if (body === this.lastBody) return this.recovered();
    if (body.trim() === '') {
      this.lastBody = body;
      this.options.logger.warn(`manifest URL ${url} returned an empty body; it serves no pods`, { url });
      return this.publish([]);
    }
    const { pods, errors } = parseManifests(body, url, {
      defaults: (pod) =>
        applyStaticPodDefaults(pod, {
          source: 'http',
          origin: url,
          nodeName: this.options.nodeName,
          now: this.options.clock.now(),
        }),
    });
    if (errors.length > 0) {
      const reason = errors.join('; ');
      if (this.fail(`manifest URL ${url} served an invalid manifest: ${reason}`)) {
        this.options.bus?.emit('[Source] Manifest Rejected', { source: 'http', origin: url, reason });
      }
      return;
    }
    this.lastBody = body;
    this.publish(pods);
  }

  private async get(): Promise<string> {
    const headers = new Headers();
    for (const [name, value] of Object.entries(this.options.headers ?? {})) {
      for (const v of typeof value === 'string' ? [value] : value) headers.append(name, v);
    }
    const controller = new AbortController();
    const cancelTimer = this.options.clock.setTimeout(
      () => controller.abort(new Error(`timed out after ${this.timeoutMs} ms`)),
      this.timeoutMs,
    );
    try {
      const response = await fetch(this.options.url, {
        headers,
        signal: controller.signal,
        redirect: 'follow',
      });
      const text = await readAtMost(response, this.maxBytes);
      if (!response.ok) {
        const status =
          `${response.status} ${response.statusText || STATUS_CODES[response.status] || ''}`.trim();
        throw new HttpFailure(`manifest URL ${this.options.url} returned HTTP ${status}`);
      }
      return text;
    } catch (err) {
      if (controller.signal.aborted && !(err instanceof HttpFailure)) throw controller.signal.reason;
      throw err;
    } finally {
      cancelTimer();
    }
  }

  /** Logs a failure unless it is the one already reported; returns whether it was logged. */
  private fail(problem: string): boolean {
    if (problem === this.lastFailure) return false;
    this.lastFailure = problem;
    const kept = this.current.length;
    this.options.logger.warn(
      `${problem}; ` + (this.emitted ? `keeping the ${kept} pod(s) it last served` : 'no pods from it yet'),
      { url: this.options.url },
    );
    return true;
  }

  private recovered(): void {
    if (this.lastFailure === undefined) return;
    this.lastFailure = undefined;
    this.options.logger.info('manifest URL is serving again', {
      url: this.options.url,
      pods: this.current.length,
    });
  }

  private publish(pods: Pod[]): void {
    this.recovered();
    this.current = pods;
    this.emitted = true;
    this.subject.next(pods);
  }
}

class HttpFailure extends Error {}

async function readAtMost(response: Response, maxBytes: number): Promise<string> {
  if (!response.body) return '';
  const length = Number(response.headers.get('content-length') ?? NaN);
  if (length > maxBytes) {
    await response.body.cancel();
    throw new HttpFailure(limitMessage(`manifest URL ${response.url}`, length, maxBytes));
  }
  const chunks: Uint8Array[] = [];
  let total = 0;
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel();
      throw new HttpFailure(limitMessage(`manifest URL ${response.url}`, `more than ${maxBytes}`, maxBytes));
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function limitMessage(what: string, size: number | string, maxBytes: number): string {
  return maxBytes === MAX_MANIFEST_BYTES
    ? manifestTooLarge(what, size)
    : `${what} is ${size} bytes, more than the limit of ${maxBytes}`;
}

function describe(err: unknown): string {
  const e = err as Error & { cause?: Error & { code?: string } };
  // fetch wraps the network error: "fetch failed" with the socket error as its cause.
  return e?.cause?.message ? e.cause.message : (e?.message ?? String(err));
}
