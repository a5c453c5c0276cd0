/**
 * The top frames of a V8 CPU profile (`.cpuprofile`, from `node --cpu-prof` or `density --cpu-prof-dir`):
 * self time by function and by file, and inclusive time by function, in % of the sampled time.
 *
 *   node bench/dist/profile-top.js <file.cpuprofile> [rows=30]
 */
import { readFileSync } from 'node:fs';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const [file, rowsArg] = process.argv.slice(2);
if (!file) {
  console.error('usage: node bench/dist/profile-top.js <file.cpuprofile> [rows]');
  process.exit(2);
}
const rows = Number(rowsArg ?? 30);
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

const root = new URL('../../', import.meta.url).href;
const where = (f: CallFrame) => f.url.replace(root, '').replace(/^file:\/\//, '');
const fnKey = (f: CallFrame) =>
  `${f.functionName || '(anonymous)'} ${where(f)}${f.url ? `:${f.lineNumber + 1}` : ''}`;
const fileKey = (f: CallFrame) => where(f) || f.functionName;

const self = new Map<string, number>();
const selfByFile = new Map<string, number>();
const inclusive = new Map<string, number>();
let total = 0;
const add = (m: Map<string, number>, k: string, v: number) => m.set(k, (m.get(k) ?? 0) + v);
profile.samples.forEach((id, i) => {
  const dt = profile.timeDeltas[i] ?? 0;
  total += dt;
  const leaf = byId.get(id)!.callFrame;
  add(self, fnKey(leaf), dt);
  add(selfByFile, fileKey(leaf), dt);
  const seen = new Set<string>();
  for (let n: number | undefined = id; n !== undefined; n = parent.get(n)) {
    const k = fnKey(byId.get(n)!.callFrame);
    if (!seen.has(k)) {
      seen.add(k);
      add(inclusive, k, dt);
    }
  }
});

const print = (title: string, m: Map<string, number>) => {
  console.log(`--- ${title}`);
  for (const [k, t] of [...m].sort((a, b) => b[1] - a[1]).slice(0, rows)) {
    console.log(
      `${((100 * t) / total).toFixed(1).padStart(5)}%  ${(t / 1000).toFixed(0).padStart(6)} ms  ${k}`,
    );
  }
};
console.log(`${file}: ${(total / 1000).toFixed(0)} ms sampled`);
print('self time by function', self);
print('self time by file', selfByFile);
print('inclusive time by function', inclusive);
