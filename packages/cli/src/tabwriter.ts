/**
 * Go's text/tabwriter, for the settings kubectl describes with (minwidth 0, tabwidth 8, padding 2,
 * padchar ' ', no flags), so `nodelet describe` lines up exactly as `kubectl describe` does.
 *
 * A cell is text ended by a tab; the text after a line's last tab is not a cell. A column is as wide as
 * its widest cell plus the padding, over a block of consecutive lines that all have a cell in that
 * column; a line with fewer cells ends the block (so "Containers:" alone on a line starts the alignment
 * over).
 */
export interface TabwriterOptions {
  minwidth?: number;
  padding?: number;
}

const width = (text: string) => [...text].length;

export function tabwrite(text: string, options: TabwriterOptions = {}): string {
  const minwidth = options.minwidth ?? 0;
  const padding = options.padding ?? 2;
  const endsWithNewline = text.endsWith('\n');
  const lines = (endsWithNewline ? text.slice(0, -1) : text).split('\n').map((l) => l.split('\t'));
  const out: string[] = [];

  const writeLines = (from: number, to: number, widths: readonly number[]) => {
    for (let i = from; i < to; i++) {
      const cells = lines[i]!;
      let s = '';
      cells.forEach((cell, j) => {
        s += cell;
        if (j < cells.length - 1 && j < widths.length) s += ' '.repeat(Math.max(0, widths[j]! - width(cell)));
      });
      out.push(s);
    }
  };

  const format = (line0: number, line1: number, widths: number[]): void => {
    const column = widths.length;
    for (let i = line0; i < line1; i++) {
      if (column >= lines[i]!.length - 1) continue;
      writeLines(line0, i, widths);
      line0 = i;
      let w = minwidth;
      for (; i < line1; i++) {
        const cells = lines[i]!;
        if (column >= cells.length - 1) break;
        w = Math.max(w, width(cells[column]!) + padding);
      }
      format(line0, i, [...widths, w]);
      line0 = i;
      i--; // the line that ended the block is looked at again by the loop
    }
    writeLines(line0, line1, widths);
  };

  format(0, lines.length, []);
  return out.join('\n') + (endsWithNewline ? '\n' : '');
}
