/** A chain's rules: a byte range of one of a render's text blocks, and how many rule lines it holds. */
export interface Span {
  readonly block: Buffer;
  readonly start: number;
  readonly end: number;
  readonly lines: number;
}

export const sameSpan = (a: Span | undefined, b: Span): boolean =>
  a !== undefined &&
  a.end - a.start === b.end - b.start &&
  a.block.compare(b.block, b.start, b.end, a.start, a.end) === 0;

/** Blocks of a whole (kept) output: they start small and double, up to this size. */
const BLOCK_BYTES = 1 << 20;
const FIRST_BLOCK_BYTES = 16 * 1024;
/**
 * A streamed render's blocks: a little more than the chunk it hands on at a time, so that it writes
 * into two or three blocks over and over instead of its whole output into fresh memory.
 */
const STREAM_BLOCK_BYTES = 256 * 1024;
/** Most blocks a recycler keeps between streamed renders. */
const RECYCLER_MAX_BLOCKS = 4;
const EMPTY: Buffer = Buffer.alloc(0);
const NEWLINE = 10;
/** Up to this many characters a string is copied by a JavaScript loop (measured: the quicker side). */
const SHORT_TEXT = 16;

// Buffer's own UTF-8 writer, without `write()`'s argument handling, which dominated the first renders
// of a process (before the JIT has optimised it). Node has had it on every Buffer since its first
// versions; `write` stands in where it is missing. (Called as a method: through `.call` it is slow.)
interface Utf8Writer {
  utf8Write(s: string, offset: number): number;
}
const writeUtf8: (buf: Buffer, s: string, offset: number) => number =
  typeof (Buffer.prototype as Partial<Utf8Writer>).utf8Write === 'function'
    ? (buf, s, offset) => (buf as unknown as Utf8Writer).utf8Write(s, offset)
    : (buf, s, offset) => buf.write(s, offset, 'utf8');

/**
 * Rule text written straight into byte blocks. A rule is written as soon as it is made (a short-lived
 * string, dead before the next garbage collection), so the output is never held as strings. A whole
 * render's blocks are its own, fresh and kept with its output; a streamed render's come from a
 * `BlockRecycler` and are written again once what they held has been handed on (`recycle()`).
 */
export class TextArena {
  private buf: Buffer = EMPTY;
  private pos = 0;
  private start = 0;
  /** Every block this arena wrote into since it last recycled, in order. */
  readonly blocks: Buffer[] = [];

  constructor(private readonly recycler?: BlockRecycler) {}

  /** Starts a range (one service's rules, or one line). */
  begin(): this {
    this.start = this.pos;
    return this;
  }

  /** Bytes written since `begin()`: offsets within the open range stay valid when it moves. */
  get written(): number {
    return this.pos - this.start;
  }

  /** Where the open range is now: its block, start and end. */
  get block(): Buffer {
    return this.buf;
  }
  get rangeStart(): number {
    return this.start;
  }
  get position(): number {
    return this.pos;
  }

  /**
   * Appends `s` as UTF-8. Short strings (most pieces of a rule: names, addresses, "-A ") are copied
   * byte by byte in JavaScript, which costs less than a call into the native encoder; longer ones go to
   * the encoder, which is fast from the first call on, before the JIT has optimised this loop.
   */
  text(s: string): this {
    const n = s.length;
    if (this.pos + 3 * n > this.buf.length) this.grow(3 * n);
    const buf = this.buf;
    let pos = this.pos;
    if (n > SHORT_TEXT) pos += writeUtf8(buf, s, pos);
    else {
      for (let i = 0; i < n; i++) {
        const c = s.charCodeAt(i);
        if (c >= 0x80) {
          pos += writeUtf8(buf, s.slice(i), pos);
          break;
        }
        buf[pos++] = c;
      }
    }
    this.pos = pos;
    return this;
  }

  /** Appends `s` and a newline. */
  line(s: string): this {
    this.text(s);
    return this.newline();
  }

  newline(): this {
    if (this.pos + 1 > this.buf.length) this.grow(1);
    this.buf[this.pos++] = NEWLINE;
    return this;
  }

  /** Ends the range begun last; `lines` is how many rule lines it holds. */
  end(lines: number): Span {
    return { block: this.buf, start: this.start, end: this.pos, lines };
  }

  /**
   * Everything written so far has been handed on and is no longer read by anyone: the blocks before
   * the current one go back to the recycler, and the current one is written again from its start.
   * Only between ranges, and only for an arena with a recycler.
   */
  recycle(): void {
    const current = this.blocks.pop();
    this.recycler!.give(this.blocks);
    this.blocks.length = 0;
    if (current) this.blocks.push(current);
    this.pos = this.start = 0;
  }

  /** Hands every block back to the recycler (the arena is not used again). */
  release(): void {
    this.recycler!.give(this.blocks);
    this.blocks.length = 0;
    this.buf = EMPTY;
    this.pos = this.start = 0;
  }

  /** A new block, the open range carried over so that it stays contiguous. */
  private grow(need: number): void {
    const open = this.pos - this.start;
    const size = 2 * (open + need);
    const next = this.recycler
      ? this.recycler.take(size)
      : Buffer.allocUnsafe(Math.max(Math.min(BLOCK_BYTES, FIRST_BLOCK_BYTES << this.blocks.length), size));
    this.blocks.push(next);
    this.buf.copy(next, 0, this.start, this.pos);
    this.buf = next;
    this.start = 0;
    this.pos = open;
  }
}

/**
 * The blocks a renderer's streamed renders write into, kept from one render to the next. Memory touched
 * for the first time costs a page fault per 4 KiB, and on a virtual machine that is a good part of what
 * a render spends (measured: 13 µs a fault here; a 1,000-service render writes 3 MB); upstream's
 * proxier keeps its rule buffers from one sync to the next for the same reason.
 */
export class BlockRecycler {
  private readonly free: Buffer[] = [];
  /** Bytes of every block this recycler has allocated. */
  allocated = 0;

  /** A block of at least `min` bytes: a kept one if it is big enough, else a new one. */
  take(min: number): Buffer {
    const last = this.free[this.free.length - 1];
    if (last && last.length >= min) return this.free.pop()!;
    const size = Math.max(STREAM_BLOCK_BYTES, min);
    this.allocated += size;
    return Buffer.allocUnsafe(size);
  }

  /** Keeps blocks for reuse, up to a bound; the rest are left to the garbage collector. */
  give(blocks: readonly Buffer[]): void {
    for (const b of blocks) {
      if (this.free.length >= RECYCLER_MAX_BLOCKS) return;
      if (b.length >= STREAM_BLOCK_BYTES) this.free.push(b);
    }
  }
}
