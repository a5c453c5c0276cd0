/**
 * Draws the proxy bench's results as one SVG: kernel apply (the floor) and nodelet's full sync by size,
 * on a log scale, and the three ratios (a) render, (b) full sync, (c) one change, each against its goal.
 *
 *   npm run bench:proxy-plot --workspace @nodelet/bench -- --out ../docs/proxy-bench.svg RESULT.json…
 *
 * RESULT.json: files written by `bench:proxy --out`; rows of several runs are drawn together (a backend
 * and size present in two files: the later file's row).
 */
import { readFile, writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';

interface Row {
  backend: string;
  services: number;
  floorApplyMs: number;
  nodeletFullMs: number;
  renderRatio: number;
  runningRenderRatio?: number;
  fullRatio: number;
  runningFullRatio?: number;
  change: { ratio: number };
}
interface Result {
  date: string;
  rows?: Row[];
  userspace?: { ratio: number };
}

const COLORS: Record<string, string> = {
  'iptables-legacy': '#1f77b4',
  'iptables-nft': '#2ca02c',
  nftables: '#d62728',
};
const color = (backend: string) => COLORS[backend] ?? '#7f7f7f';
const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');
const fmt = (ms: number) =>
  ms >= 1000 ? `${(ms / 1000).toFixed(ms >= 10_000 ? 0 : 1)} s` : `${Math.round(ms)} ms`;

/** One panel's frame: its title, and where its plot area is. */
interface Frame {
  x: number;
  y: number;
  w: number;
  h: number;
}

function title(f: Frame, text: string): string {
  return `<text x="${f.x}" y="${f.y - 12}" font-weight="bold">${esc(text)}</text>`;
}

/** Floor and nodelet full sync against the number of services, log scale. */
function timesPanel(f: Frame, rows: Row[], sizes: number[]): string {
  const all = rows.flatMap((r) => [r.floorApplyMs, r.nodeletFullMs]);
  const lo = Math.pow(10, Math.floor(Math.log10(Math.min(...all))));
  const hi = Math.pow(10, Math.ceil(Math.log10(Math.max(...all))));
  const y = (ms: number) => f.y + f.h - ((Math.log10(ms) - Math.log10(lo)) / Math.log10(hi / lo)) * f.h;
  const x = (n: number) => f.x + ((sizes.indexOf(n) + 0.5) / sizes.length) * f.w;
  const out = [title(f, 'Full sync into empty tables: kernel apply vs nodelet (log scale)')];
  for (let v = lo; v <= hi; v *= 10) {
    out.push(
      `<line x1="${f.x}" x2="${f.x + f.w}" y1="${y(v)}" y2="${y(v)}" stroke="#ddd"/>`,
      `<text x="${f.x - 6}" y="${y(v) + 4}" text-anchor="end">${fmt(v)}</text>`,
    );
  }
  for (const n of sizes) {
    out.push(
      `<text x="${x(n)}" y="${f.y + f.h + 16}" text-anchor="middle">${n.toLocaleString('en')} services</text>`,
    );
  }
  for (const backend of [...new Set(rows.map((r) => r.backend))]) {
    const mine = rows.filter((r) => r.backend === backend).sort((a, b) => a.services - b.services);
    for (const [key, dash] of [
      ['floorApplyMs', ''],
      ['nodeletFullMs', ' stroke-dasharray="5 4"'],
    ] as const) {
      const pts = mine.map((r) => `${x(r.services)},${y(r[key])}`).join(' ');
      out.push(`<polyline points="${pts}" fill="none" stroke="${color(backend)}" stroke-width="2"${dash}/>`);
      for (const r of mine) {
        out.push(
          key === 'floorApplyMs'
            ? `<circle cx="${x(r.services)}" cy="${y(r[key])}" r="4" fill="${color(backend)}"/>`
            : `<rect x="${x(r.services) - 3.5}" y="${y(r[key]) - 3.5}" width="7" height="7" fill="white" stroke="${color(backend)}" stroke-width="2"/>`,
        );
      }
    }
  }
  return out.join('\n');
}

/** One ratio per backend and size as bars, with the goal as a line; `marker`: a second figure, as a diamond. */
function ratioPanel(
  f: Frame,
  heading: string,
  rows: Row[],
  value: (r: Row) => number,
  goal: number,
  marker?: (r: Row) => number | undefined,
): string {
  const max = Math.max(goal * 1.5, ...rows.map(value)) * 1.1;
  const y = (v: number) => f.y + f.h - (v / max) * f.h;
  const bar = f.w / (rows.length + 1);
  const out = [
    title(f, heading),
    `<line x1="${f.x}" x2="${f.x + f.w}" y1="${y(0)}" y2="${y(0)}" stroke="#999"/>`,
  ];
  rows.forEach((r, i) => {
    const v = value(r);
    const cx = f.x + (i + 1) * bar;
    const met = v <= goal;
    out.push(
      `<rect x="${cx - bar * 0.35}" y="${y(v)}" width="${bar * 0.7}" height="${y(0) - y(v)}" fill="${color(r.backend)}" fill-opacity="${met ? 0.85 : 0.35}" stroke="${color(r.backend)}"/>`,
      `<text x="${cx}" y="${y(v) - 4}" text-anchor="middle"${met ? '' : ' font-weight="bold"'}>${v}</text>`,
      `<text x="${cx}" y="${f.y + f.h + 16}" text-anchor="middle">${r.services / 1000}k</text>`,
    );
    const m = marker?.(r);
    if (m !== undefined) {
      const my = y(m);
      out.push(
        `<path d="M ${cx} ${my - 6} L ${cx + 6} ${my} L ${cx} ${my + 6} L ${cx - 6} ${my} Z" fill="white" stroke="black" stroke-width="1.5"/>`,
        `<text x="${cx + 9}" y="${my + 4}" font-size="11">${m}</text>`,
      );
    }
  });
  out.push(
    `<line x1="${f.x}" x2="${f.x + f.w}" y1="${y(goal)}" y2="${y(goal)}" stroke="black" stroke-dasharray="6 3"/>`,
    `<text x="${f.x + f.w + 4}" y="${y(goal) + 4}">≤ ${goal}</text>`,
  );
  return out.join('\n');
}

function legend(x: number, y: number, backends: string[], userspace: number | undefined): string {
  const out: string[] = [];
  backends.forEach((b, i) => {
    out.push(
      `<rect x="${x + i * 150}" y="${y - 10}" width="12" height="12" fill="${color(b)}"/>`,
      `<text x="${x + i * 150 + 18}" y="${y}">${esc(b)}</text>`,
    );
  });
  const x2 = x + backends.length * 150;
  out.push(
    `<circle cx="${x2 + 6}" cy="${y - 4}" r="4" fill="#555"/><text x="${x2 + 16}" y="${y}">kernel apply (floor)</text>`,
    `<rect x="${x2 + 152}" y="${y - 7.5}" width="7" height="7" fill="white" stroke="#555" stroke-width="2"/><text x="${x2 + 166}" y="${y}">nodelet full sync</text>`,
    `<text x="${x2 + 300}" y="${y}">dashed line: goal; pale bar: missed</text>`,
  );
  out.push(
    `<text x="${x + 460}" y="${y + 20}">(a), (b) bar: a new proxy; ◇: a running proxy (iptables)</text>`,
  );
  if (userspace !== undefined) {
    out.push(
      `<text x="${x}" y="${y + 20}">userspace proxy throughput ÷ direct loopback: ${userspace} (goal ≥ 0.5)</text>`,
    );
  }
  return out.join('\n');
}

export function plot(results: Result[]): string {
  const byKey = new Map<string, Row>();
  for (const r of results) for (const row of r.rows ?? []) byKey.set(`${row.backend} ${row.services}`, row);
  const backends = [...new Set([...byKey.values()].map((r) => r.backend))].sort();
  const rows = [...byKey.values()].sort(
    (a, b) => backends.indexOf(a.backend) - backends.indexOf(b.backend) || a.services - b.services,
  );
  if (rows.length === 0)
    throw new Error('no proxy bench rows in the given files (written by bench:proxy --out)');
  const sizes = [...new Set(rows.map((r) => r.services))].sort((a, b) => a - b);
  const userspace = results
    .map((r) => r.userspace?.ratio)
    .filter((v) => v !== undefined)
    .pop();
  const dates = results.map((r) => r.date.slice(0, 16).replace('T', ' ')).sort();
  const W = 1000;
  const H = 620;
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="20" y="24" font-size="15" font-weight="bold">nodelet proxy against the kernel (${esc(dates[0]!)}${dates.length > 1 ? ` – ${esc(dates[dates.length - 1]!)}` : ''} UTC)</text>`,
    legend(20, 50, backends, userspace),
    timesPanel({ x: 80, y: 110, w: 380, h: 190 }, rows, sizes),
    ratioPanel(
      { x: 560, y: 110, w: 370, h: 190 },
      '(a) render ÷ kernel apply',
      rows,
      (r) => r.renderRatio,
      0.1,
      (r) => r.runningRenderRatio,
    ),
    ratioPanel(
      { x: 80, y: 380, w: 370, h: 190 },
      '(b) nodelet full sync ÷ kernel apply',
      rows,
      (r) => r.fullRatio,
      1.1,
      (r) => r.runningFullRatio,
    ),
    ratioPanel(
      { x: 560, y: 380, w: 370, h: 190 },
      '(c) one endpoint change: nodelet ÷ hand-made',
      rows,
      (r) => r.change.ratio,
      1.2,
    ),
    '</svg>',
  ];
  return parts.join('\n') + '\n';
}

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    options: { out: { type: 'string' } },
    allowPositionals: true,
  });
  if (!values.out || positionals.length === 0) {
    throw new Error('usage: proxy-plot --out FILE.svg RESULT.json… (files written by bench:proxy --out)');
  }
  const results: Result[] = [];
  for (const file of positionals) {
    try {
      results.push(JSON.parse(await readFile(file, 'utf8')) as Result);
    } catch (err) {
      throw new Error(`${file}: not a proxy bench result (${(err as Error).message})`);
    }
  }
  await writeFile(values.out, plot(results));
  console.log(`wrote ${values.out}`);
}

await main();
