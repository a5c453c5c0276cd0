// The CRI conformance suite against a real containerd (scripts/containerd/setup.sh), through the
// runtime-cri plugin. Without containerd: skipped with one line, or failed when CI=true.
import test from 'ava';
import { requireContainerd } from '../testing/containerd.js';
import { defineConformance } from './suite.js';
import { containerdTarget } from './targets.js';

const containerd = await requireContainerd(test);
if (containerd) {
  defineConformance('containerd', containerdTarget(containerd.endpoint, containerd.socket), {
    skipPullPresent:
      'containerd resolves every PullImage against the registry, even for a present image, and no registry is reachable here',
  });
}
