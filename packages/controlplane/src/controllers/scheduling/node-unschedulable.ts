import { toleratesTaint } from '@nodelet/api';
import type { FilterPlugin } from './framework.js';

/** NodeUnschedulable: a cordoned node (`spec.unschedulable`) takes only pods that tolerate its taint. */
export const nodeUnschedulable: FilterPlugin = {
  name: 'NodeUnschedulable',
  filter(ctx, { node }) {
    if (!node.spec?.unschedulable) return [];
    const taint = { key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule' };
    const tolerated = (ctx.pod.spec?.tolerations ?? []).some((t: any) => toleratesTaint(t, taint));
    return tolerated ? [] : ['node(s) were unschedulable'];
  },
};
