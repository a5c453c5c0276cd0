import { parseGoDuration } from '@nodelet/api';

/** Go duration strings as KubeletConfiguration writes them ("20s", "1m0s", "1h30m", "500ms") in ms. */
export function parseDuration(text: string, field: string): number {
  const ms = parseGoDuration(text);
  if (ms === undefined) {
    throw new Error(`field "${field}": "${text}" is not a duration; write it like 20s, 1m30s or 500ms`);
  }
  return ms;
}
