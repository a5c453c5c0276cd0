/**
 * One CRI endpoint as a RuntimeService and an ImageService that survive runtime restarts.
 *
 * grpc-js reconnects a channel after a failure with exponential backoff (1 s, growing to 2 min);
 * while it waits, every call fails with UNAVAILABLE even once the runtime is back. The kubelet
 * should see the runtime again on its next call, so a call that fails Unavailable retires its
 * channel: the next call dials a fresh one. A retired channel closes once its calls in flight
 * (a long StopContainer, an event stream) have finished, so nothing is cut short.
 *
 *     call ──► current channel ──ok──► result
 *                    │
 *                    └─Unavailable─► retire it (closed when idle) ─► next call dials anew
 */
import { NodeletError, isErrorCode } from '@nodelet/kernel';
import {
  createCriClient,
  type CriClient,
  type CriClientOptions,
  type ImageService,
  type RuntimeService,
} from '@nodelet/cri';

interface Channel {
  readonly client: CriClient;
  inflight: number;
  retired: boolean;
}

export class CriConnection {
  readonly runtime: RuntimeService;
  readonly image: ImageService;
  private current: Channel | undefined;
  private closed = false;
  private dials = 0;

  constructor(
    readonly endpoint: string,
    private readonly options: CriClientOptions = {},
  ) {
    const first = this.channel();
    this.runtime = this.forward(first.client.runtime, (c) => c.runtime);
    this.image = this.forward(first.client.image, (c) => c.image);
  }

  /** How many channels were dialled: 1 plus one per reconnect. */
  get channelsDialled(): number {
    return this.dials;
  }

  /** Closes the connection; later calls fail Unavailable. */
  close(): void {
    this.closed = true;
    const current = this.current;
    this.current = undefined;
    if (current) this.retire(current);
  }

  private channel(): Channel {
    if (this.closed) {
      throw new NodeletError('Unavailable', `the CRI connection to ${this.endpoint} is closed`);
    }
    if (!this.current) {
      this.current = { client: createCriClient(this.endpoint, this.options), inflight: 0, retired: false };
      this.dials++;
    }
    return this.current;
  }

  private retire(channel: Channel): void {
    if (this.current === channel) this.current = undefined;
    channel.retired = true;
    if (channel.inflight === 0) channel.client.close();
  }

  private release(channel: Channel): void {
    channel.inflight--;
    if (channel.retired && channel.inflight === 0) channel.client.close();
  }

  private async call<T>(fn: (client: CriClient) => Promise<T>): Promise<T> {
    const channel = this.channel();
    channel.inflight++;
    try {
      return await fn(channel.client);
    } catch (err) {
      throw this.failed(channel, err);
    } finally {
      this.release(channel);
    }
  }

  private async *stream<T>(fn: (client: CriClient) => AsyncIterable<T>): AsyncGenerator<T> {
    const channel = this.channel();
    channel.inflight++;
    try {
      yield* fn(channel.client);
    } catch (err) {
      throw this.failed(channel, err);
    } finally {
      this.release(channel);
    }
  }

  /** Retires the channel after an Unavailable failure and words a failed dial for people. */
  private failed(channel: Channel, err: unknown): unknown {
    if (!isErrorCode(err, 'Unavailable')) return err;
    this.retire(channel);
    const message = (err as NodeletError).message;
    // grpc-js: "No connection established. Last error: Error: connect ENOENT /run/x.sock. Resolution note: "
    const dial =
      /^No connection established\. Last error: (?:Error: )?(.*?)\.?(?: Resolution note:.*)?$/s.exec(message);
    // A call the runtime dropped mid-way (it was killed or restarted): "read ECONNRESET", "write EPIPE".
    if (!dial) {
      return new NodeletError(
        'Unavailable',
        `lost the connection to the container runtime at ${this.endpoint}: ${message}`,
        {
          cause: err,
        },
      );
    }
    return new NodeletError(
      'Unavailable',
      `cannot connect to the container runtime at ${this.endpoint}: ${dial[1]}`,
      { cause: err },
    );
  }

  /**
   * An object with the same methods as `template` (a client's runtime or image service), each
   * calling the method on the current channel's client.
   */
  private forward<S extends object>(template: S, pick: (client: CriClient) => S): S {
    const out: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(template)) {
      if (typeof value !== 'function') continue;
      const method = (client: CriClient) =>
        (pick(client) as Record<string, (req?: unknown) => unknown>)[name]!;
      out[name] =
        name === 'containerEvents'
          ? () => ({
              [Symbol.asyncIterator]: () =>
                this.stream((c) => method(c)() as AsyncIterable<unknown>)[Symbol.asyncIterator](),
            })
          : (req: unknown) => this.call((c) => method(c)(req) as Promise<unknown>);
    }
    return out as S;
  }
}
