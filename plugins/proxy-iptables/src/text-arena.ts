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

const BLOCK_BYTES = 1 << 20;
/** A partial render writes a few chains: its blocks start small and double (kept while those are applied). */
const FIRST_PARTIAL_BYTES = 16 * 1024;
/** Most a pool keeps between full renders (one render's blocks at about 30,000 services). */
const POOL_MAX_BYTES = 96 << 20;
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
 * Rule text written straight into large byte blocks. A render keeps each chain's rules as a range of a
 * block, not as a string: 5,000 services leave a few buffers outside the JavaScript heap instead of
 * 150,000 strings for the garbage collector to copy, and the ranges go to iptables-restore as they are.
 * A rule is written as soon as it is made (a short-lived string, dead before the next garbage
 * collection), so the output is never held as strings. A block is reused only through a `BlockPool`,
 * by the owner of every range in it (the renderer, once nothing it keeps points into the block).
 */
export class TextArena {
  private buf: Buffer = EMPTY;
  private pos = 0;
  private start = 0;
  /** Every block this arena wrote into, in order. */
  readonly blocks: Buffer[] = [];

  /** Blocks come from `pool` when given (full renders), else fresh and small ones first (partial). */
  constructor(private readonly pool?: BlockPool) {}

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

  /** A new block, the open range carried over so that it stays contiguous. */
  private grow(need: number): void {
    const open = this.pos - this.start;
    const size = 2 * (open + need);
    const next = this.pool
      ? this.pool.take(size)
      : Buffer.allocUnsafe(Math.max(Math.min(BLOCK_BYTES, FIRST_PARTIAL_BYTES << this.blocks.length), size));
    this.blocks.push(next);
    this.buf.copy(next, 0, this.start, this.pos);
    this.buf = next;
    this.start = 0;
    this.pos = open;
  }
}

/**
 * Blocks handed back for the next full render. Memory touched for the first time costs a page fault
 * per 4 KiB, and on a virtual machine that is most of what a render spends (a 1,000-service render
 * writes 3 MB: 20 ms of faults beside 20 ms of rendering); upstream's proxier keeps its rule buffers
 * from one sync to the next for the same reason. Only the renderer that owns every range in a block
 * gives it back.
 */
export class BlockPool {
  private readonly free: Buffer[] = [];
  private bytes = 0;

  /** A block of at least `min` bytes: a kept one if it is big enough, else a new one. */
  take(min: number): Buffer {
    const last = this.free[this.free.length - 1];
    if (last && last.length >= min) {
      this.free.pop();
      this.bytes -= last.length;
      return last;
    }
    return Buffer.allocUnsafe(Math.max(BLOCK_BYTES, min));
  }

  /** Keeps full-sized blocks for reuse, up to a bound; the rest are left to the garbage collector. */
  give(blocks: readonly Buffer[]): void {
    for (const b of blocks) {
      if (b.length < BLOCK_BYTES || this.bytes + b.length > POOL_MAX_BYTES) continue;
      this.free.push(b);
      this.bytes += b.length;
    }
  }

  /** Bytes kept for reuse. */
  get kept(): number {
    return this.bytes;
  }
}

/**
 * Collects output as byte chunks: lines written into an arena of its own, and spans of other arenas,
 * adjacent ranges merged into one chunk. `take()` hands over what has been collected so far (to write
 * it while the rest is being rendered).
 */
export class ChunkWriter {
  /** Where `line` and `declare` write: the writer's own arena. */
  readonly arena: TextArena;
  private readonly chunks: Buffer[] = [];
  private block: Buffer | undefined;
  private start = 0;
  private end = 0;
  /** Bytes collected and not yet taken. */
  pending = 0;

  constructor(pool?: BlockPool) {
    this.arena = new TextArena(pool);
  }

  line(text: string): void {
    this.arena.begin().line(text);
    this.own();
  }

  /** A chain line (`:NAME - [0:0]`): creates the chain, or flushes it if it exists. */
  declare(chain: string): void {
    this.arena.begin().text(':').text(chain).text(' - [0:0]\n');
    this.own();
  }

  span(s: Span): void {
    this.range(s.block, s.start, s.end);
  }

  /** What `line` or `declare` just wrote into the writer's own arena. */
  private own(): void {
    this.range(this.arena.block, this.arena.rangeStart, this.arena.position);
  }

  private range(block: Buffer, start: number, end: number): void {
    if (end === start) return;
    if (this.block === block && this.end === start) this.end = end;
    else {
      this.close();
      this.block = block;
      this.start = start;
      this.end = end;
    }
    this.pending += end - start;
  }

  take(): Buffer[] {
    this.close();
    this.pending = 0;
    return this.chunks.splice(0);
  }

  private close(): void {
    if (!this.block) return;
    this.chunks.push(this.block.subarray(this.start, this.end));
    this.block = undefined;
  }
}
