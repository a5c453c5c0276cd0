/**
 * Cuts a V8 CPU profile (`node --cpu-prof`, which covers the whole life of a process) down to a window
 * of wall time, so that a steady state can be profiled without the start-up in it. The window is in
 * microseconds of the monotonic clock, as `process.hrtime.bigint() / 1000n` gives it in any process on
 * the machine: V8 stamps its profiles with the same clock.
 */
import { readFileSync, writeFileSync } from 'node:fs';

interface Profile {
  nodes: unknown[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** Writes the samples of `file` that fall in [fromUs, toUs] to `out`; returns how many were kept. */
export function cutProfile(file: string, out: string, fromUs: number, toUs: number): number {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const samples: number[] = [];
  const timeDeltas: number[] = [];
  let t = profile.startTime;
  let last = fromUs;
  profile.samples.forEach((id, i) => {
    t += profile.timeDeltas[i] ?? 0;
    if (t < fromUs || t > toUs) return;
    samples.push(id);
    timeDeltas.push(t - last);
    last = t;
  });
  writeFileSync(out, JSON.stringify({ ...profile, startTime: fromUs, endTime: toUs, samples, timeDeltas }));
  return samples.length;
}

export const monotonicUs = () => Number(process.hrtime.bigint() / 1000n);
