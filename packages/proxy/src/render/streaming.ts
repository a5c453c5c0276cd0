import { ChunkWriter } from './chunk-writer.js';
import type { BlockRecycler } from './text-arena.js';

/** Output is handed on in chunks of about this size while a full render streams. */
export const CHUNK_BYTES = 64 * 1024;

/** Yielded once by a render's steps before the first line that depends on what the kernel has. */
export const NEED_KERNEL_STATE = Symbol('need kernel state');
export type RenderStep = Buffer[] | typeof NEED_KERNEL_STATE;

/** A render's output as byte chunks, and the text they make. */
export interface RenderedText {
  /**
   * The tool's input, as byte chunks in order; empty when nothing needs writing, and for a streamed
   * render (its chunks were handed on as they were made and their memory written again).
   */
  chunks: Buffer[];
  /** Total bytes of the input. */
  bytes: number;
  /** The input as one string (for tests, golden files and error messages); not for a streamed render. */
  readonly text: string;
}

/**
 * Where one render writes its output: a `ChunkWriter`, whose collected chunks `take()` hands on (and
 * keeps, unless the render is streamed). A streamed render writes into the blocks of `recycler`, again
 * once a step's chunks were consumed (`consumed()`), so its memory does not grow with its output.
 */
export class OutputStream {
  readonly out: ChunkWriter;
  private readonly all: Buffer[] = [];
  private bytes = 0;

  constructor(private readonly recycler?: BlockRecycler) {
    this.out = new ChunkWriter(recycler);
  }

  /** The chunks collected since the last take. */
  take(): Buffer[] {
    const chunks = this.out.take();
    for (const c of chunks) this.bytes += c.length;
    if (!this.recycler) for (const c of chunks) this.all.push(c);
    return chunks;
  }

  /** After a step: its chunks have been consumed, and a streamed render writes into their blocks again. */
  consumed(): void {
    if (this.recycler) this.out.recycle();
  }

  /** Ends the output (everything was taken): its chunks, bytes and text. */
  finish(): RenderedText {
    const recycled = !!this.recycler;
    if (recycled) this.out.arena.release();
    const chunks = this.all;
    let text: string | undefined;
    return {
      chunks,
      bytes: this.bytes,
      get text() {
        if (recycled) throw new Error('a streamed render keeps no text: render again to see it');
        return (text ??= Buffer.concat(chunks).toString('utf8'));
      },
    };
  }
}

/** Runs `steps` to the end: chunks to `consume`, the kernel state from `kernel` when asked for. */
export function drain<K, O>(
  steps: Generator<RenderStep, O, K | undefined>,
  kernel: K,
  consume: (chunk: Buffer) => void,
): O {
  let r = steps.next();
  while (!r.done) {
    if (r.value === NEED_KERNEL_STATE) r = steps.next(kernel);
    else {
      for (const c of r.value) consume(c);
      r = steps.next();
    }
  }
  return r.value;
}

// The loops of a render over every service port live in functions of their own, not in a render's
// generator: the JIT optimises a small function within the first render, while a large generator is
// optimised only after a dozen renders (measured: a new proxy's render at 1,000 services took 50 ms
// until then, against 20 ms after).

/**
 * Writes `items` with `write` a chunk at a time: yields each chunk of output, and once it has been
 * consumed writes on. (The loop over the items is a plain function: the JIT optimises it at once.)
 * `wholeChunks`: what is left after the last whole chunk stays pending, for what follows to fill.
 */
export function* paced<T>(
  items: readonly T[],
  write: (item: T) => void,
  stream: OutputStream,
  wholeChunks = false,
): Generator<Buffer[], void, unknown> {
  const progress = { next: 0 };
  while (progress.next < items.length) {
    writeSome(items, progress, write, stream.out);
    if (wholeChunks && stream.out.pending < CHUNK_BYTES) return;
    yield stream.take();
    stream.consumed();
  }
}

/** Writes `items` from `progress.next` on until about a chunk of output is pending or all are written. */
function writeSome<T>(
  items: readonly T[],
  progress: { next: number },
  write: (item: T) => void,
  out: ChunkWriter,
): void {
  while (progress.next < items.length) {
    write(items[progress.next++]!);
    if (out.pending >= CHUNK_BYTES) return;
  }
}
