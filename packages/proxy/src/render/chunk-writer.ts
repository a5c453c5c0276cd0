import { type BlockRecycler, type Span, TextArena } from './text-arena.js';

/**
 * Collects output as byte chunks: lines written into an arena of its own, and spans of other arenas,
 * adjacent ranges merged into one chunk. `take()` hands over what has been collected so far (to write
 * it while the rest is being rendered).
 */
export class ChunkWriter {
  /** Where `line` and `piece` write: the writer's own arena. */
  readonly arena: TextArena;
  private readonly chunks: Buffer[] = [];
  private block: Buffer | undefined;
  private start = 0;
  private end = 0;
  /** Bytes collected and not yet taken. */
  pending = 0;

  constructor(recycler?: BlockRecycler) {
    this.arena = new TextArena(recycler);
  }

  line(text: string): void {
    this.arena.begin().line(text);
    this.own();
  }

  /**
   * A line written piece by piece, without a string of its own: write it into the arena this returns,
   * then call `wrote()`.
   */
  piece(): TextArena {
    return this.arena.begin();
  }

  /** Collects what was written since `piece()`. */
  wrote(): void {
    this.own();
  }

  span(s: Span): void {
    this.range(s.block, s.start, s.end);
  }

  /** What `line` or `piece` just wrote into the writer's own arena. */
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

  /** Every chunk taken so far has been consumed: the arena writes into its blocks again. */
  recycle(): void {
    if (this.pending > 0) throw new Error('recycling output that was not taken');
    this.arena.recycle();
  }

  private close(): void {
    if (!this.block) return;
    this.chunks.push(this.block.subarray(this.start, this.end));
    this.block = undefined;
  }
}
