import { humanDuration, since } from '@nodelet/api';
import type { KubeObject } from '../object.js';

/**
 * The cells `kubectl get` prints, computed on the server as upstream's printers
 * (pkg/printers/internalversion/printers.go) do: durations as HumanDuration. A pod's cells are
 * `podCells` of @nodelet/api, shared with `nodelet get pods`. Pure functions of an object and "now".
 */
export { humanDuration, since };

/** The AGE cell of any object. */
export function age(obj: KubeObject, now: number): string {
  return since(obj.metadata?.creationTimestamp, now);
}

/** `a=b,c=d` (sorted), or `<none>`. */
export function formatLabels(labels: Record<string, string> | undefined): string {
  const entries = Object.entries(labels ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return entries.length ? entries.map(([k, v]) => `${k}=${v}`).join(',') : '<none>';
}
