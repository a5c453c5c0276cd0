import type { FilterPlugin, ScorePlugin } from './framework.js';
import { nodeAllocatable, podRequests, resourceNames, type Resources } from './resources.js';

/** NodeResourcesFit (filter): requests (cpu, memory, ephemeral-storage, one pod) within what is left. */
export const nodeResourcesFitFilter: FilterPlugin = {
  name: 'NodeResourcesFit',
  preFilter(ctx) {
    ctx.state.set('NodeResourcesFit', podRequests(ctx.pod));
  },
  filter(ctx, { node, requested: used }) {
    const requests = ctx.state.get('NodeResourcesFit') as Resources;
    const free = nodeAllocatable(node);
    const reasons: string[] = [];
    if (used.pods + 1 > free.pods) reasons.push('Too many pods');
    for (const name of resourceNames) {
      if (requests[name] > 0 && used[name] + requests[name] > free[name])
        reasons.push(`Insufficient ${name}`);
    }
    return reasons;
  },
};

/**
 * NodeResourcesFit (score, LeastAllocated): the free share of cpu and memory after the pod, weighted
 * equally, 0–100. Requests count with the non-zero defaults (100m, 200 MiB). Unlike upstream's integer
 * arithmetic the score keeps its fraction, so equal nodes tie exactly and the first by name wins.
 */
export const nodeResourcesFitScore: ScorePlugin = {
  name: 'NodeResourcesFit',
  weight: 1,
  preScore(ctx) {
    ctx.state.set('NodeResourcesFit/score', podRequests(ctx.pod, true));
  },
  score(ctx, { node, nonZeroRequested: used }) {
    const requests = ctx.state.get('NodeResourcesFit/score') as Resources;
    const free = nodeAllocatable(node);
    const share = (n: 'cpu' | 'memory') =>
      free[n] > 0 && Number.isFinite(free[n]) ? Math.max(0, (free[n] - used[n] - requests[n]) / free[n]) : 1;
    return ((share('cpu') + share('memory')) / 2) * 100;
  },
};
