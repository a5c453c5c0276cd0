import type { FilterPlugin } from './framework.js';

/** NodeName: a pod that names a node (`spec.nodeName`) fits that node only. */
export const nodeName: FilterPlugin = {
  name: 'NodeName',
  filter(ctx, { name }) {
    const wanted = ctx.pod.spec?.nodeName;
    return !wanted || wanted === name ? [] : ["node(s) didn't match the requested node name"];
  },
};
