import { setFlagsFromString } from 'node:v8';

/**
 * Keeps V8's young generation at its starting size in `nodelet proxy`.
 *
 * V8 doubles the young generation's semi-spaces (up to 2 × 16 MiB on 64-bit) whenever many objects
 * survive a scavenge, and the proxy's start — loading modules, then the Service and EndpointSlice lists,
 * whose objects all survive — is exactly that; the pages stay in the peak RSS, ~20 MiB of it at 1,000
 * Services. A smaller young generation only promotes the surviving objects sooner, which they would be
 * anyway. `--max-semi-space-size` is read when the process starts, before any of our code runs, so the
 * proxy sets the growth factor to 1 instead: V8 clamps that flag to ≥ 2 on its command line but reads it
 * at each growth, so set here it stops growth from now on. A semi-space flag of the operator's own (on
 * node's command line or in NODE_OPTIONS) wins: then nothing is changed.
 */
export function holdYoungGeneration(
  execArgv: readonly string[] = process.execArgv,
  nodeOptions: string = process.env.NODE_OPTIONS ?? '',
): boolean {
  if (
    [...execArgv, ...nodeOptions.split(/\s+/)].some((a) => /^--(?:(?:max|min)[-_])?semi[-_]space/.test(a))
  ) {
    return false;
  }
  setFlagsFromString('--semi-space-growth-factor=1');
  return true;
}
