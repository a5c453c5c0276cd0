import { parseGoDuration } from '@nodelet/api';
import { intFlag } from './args.js';
import { CliError } from './errors.js';

/**
 * The flags of `nodelet up` that tune its control plane's loops, spelled as upstream's components spell
 * them: how node failures are handled (kube-controller-manager's --node-monitor-period and
 * --node-monitor-grace-period, kube-apiserver's --default-*-toleration-seconds) and how often resource
 * metrics are scraped (metrics-server's --metric-resolution). Their values become the control plane
 * plugin's configuration of the same names.
 */
export const controlPlaneLoopOptions = {
  'node-monitor-period': { type: 'string' },
  'node-monitor-grace-period': { type: 'string' },
  'default-not-ready-toleration-seconds': { type: 'string' },
  'default-unreachable-toleration-seconds': { type: 'string' },
  'metric-resolution': { type: 'string' },
} as const;

export const controlPlaneLoopHelp = `  --node-monitor-period DURATION
                      how often the node lifecycle controller checks node health (default 5s)
  --node-monitor-grace-period DURATION
                      a node whose kubelet renews neither its Lease nor its status for this long turns
                      NotReady (conditions Unknown) and is tainted node.kubernetes.io/unreachable
                      (kube-controller-manager's flag; default 50s)
  --default-not-ready-toleration-seconds N
  --default-unreachable-toleration-seconds N
                      how long pods that do not say otherwise stay on a NotReady or unreachable node
                      before they are evicted (kube-apiserver's flags; default 300)
  --metric-resolution DURATION
                      how often the kubelets' resource metrics are scraped for kubectl top and the
                      metrics API; a CPU figure needs two scrapes (metrics-server's flag; default 15s)
`;

export interface ControlPlaneLoopFlags {
  nodeMonitorPeriodMs?: number;
  nodeMonitorGracePeriodMs?: number;
  defaultNotReadyTolerationSeconds?: number;
  defaultUnreachableTolerationSeconds?: number;
  metricResolutionMs?: number;
}

type Values = { [K in keyof typeof controlPlaneLoopOptions]?: string };

function positiveDuration(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const ms = parseGoDuration(value.trim());
  if (ms === undefined || ms <= 0) {
    throw new CliError(
      `flag --${name} must be a positive duration such as 5s or 1m, got ${JSON.stringify(value)}`,
    );
  }
  return ms;
}

export function parseControlPlaneLoopFlags(values: Values): ControlPlaneLoopFlags {
  const out: ControlPlaneLoopFlags = {
    nodeMonitorPeriodMs: positiveDuration('node-monitor-period', values['node-monitor-period']),
    nodeMonitorGracePeriodMs: positiveDuration(
      'node-monitor-grace-period',
      values['node-monitor-grace-period'],
    ),
    defaultNotReadyTolerationSeconds: intFlag(
      'default-not-ready-toleration-seconds',
      values['default-not-ready-toleration-seconds'],
      0,
      2 ** 31 - 1,
    ),
    defaultUnreachableTolerationSeconds: intFlag(
      'default-unreachable-toleration-seconds',
      values['default-unreachable-toleration-seconds'],
      0,
      2 ** 31 - 1,
    ),
    metricResolutionMs: positiveDuration('metric-resolution', values['metric-resolution']),
  };
  for (const k of Object.keys(out) as (keyof ControlPlaneLoopFlags)[])
    if (out[k] === undefined) delete out[k];
  return out;
}
