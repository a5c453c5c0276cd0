import { rejectUpgrade } from '@nodelet/streaming';
import { readFileSync } from 'node:fs';
import { cpus, hostname, totalmem } from 'node:os';
import type { Pod } from '@nodelet/api';
import type { Logger } from '@nodelet/kernel';
import type { Kubelet } from '../kubelet.js';
import { containerLogsHandler } from './container-logs-route.js';
import { nodeLogsHandler } from './node-logs-route.js';
import { RouteTable, sendJson, sendText } from './routes.js';

export interface KubeletRoutesOptions {
  /** The running KubeletConfiguration, for `/configz`. */
  configz?: () => object;
  /** The node log directory `/logs/` serves (upstream /var/log). */
  logDir?: string;
}

const minSyncLoopThresholdMs = 5 * 60_000;

/**
 * The kubelet's own endpoints (upstream InstallDefaultHandlers and InstallDebuggingHandlers). Those
 * marked readOnly are also served on the read-only port: healthz, pods and spec (stats and metrics
 * are registered by their own parts). Exec, attach, portForward and run are placeholders (501) until
 * the streaming part registers its handlers over them.
 */
export function installKubeletRoutes(
  table: RouteTable,
  kubelet: Kubelet,
  logger: Logger,
  o: KubeletRoutesOptions = {},
) {
  const healthChecks = (): { name: string; error?: string }[] => [
    { name: 'ping' },
    { name: 'log' },
    { name: 'syncloop', error: syncLoopError(kubelet) },
    { name: 'pleg', error: kubelet.healthz().healthy ? undefined : kubelet.healthz().message },
  ];
  table.addRoute({
    path: '/healthz',
    readOnly: true,
    handler: (_req, res, { query }) => {
      const checks = healthChecks();
      const failed = checks.filter((c) => c.error);
      if (failed.length === 0 && !query.has('verbose')) return sendText(res, 200, 'ok');
      // Go healthz: one line per check, reasons withheld from the body.
      let body = '';
      for (const c of checks)
        body += c.error ? `[-]${c.name} failed: reason withheld\n` : `[+]${c.name} ok\n`;
      body += failed.length ? 'healthz check failed\n' : 'healthz check passed\n';
      sendText(res, failed.length ? 500 : 200, body);
    },
  });
  table.addRoute({
    path: '/healthz/',
    readOnly: true,
    handler: (_req, res, { segments }) => {
      const name = segments.slice(1).join('/');
      const check = healthChecks().find((c) => c.name === name);
      if (!check) return sendText(res, 404, '404 page not found\n');
      if (check.error) return sendText(res, 500, `internal server error: ${check.error}\n`);
      sendText(res, 200, 'ok');
    },
  });
  // A nodelet addition: /pods/<namespace>/<name>/events, the pod's last events (probe failures, kills).
  table.addRoute({
    path: '/pods/',
    readOnly: true,
    handler: (_req, res, { segments }) => {
      if (segments.length === 1 || (segments.length === 2 && segments[1] === '')) {
        return sendJson(res, 200, kubelet.podList());
      }
      const events =
        segments.length === 4 && segments[3] === 'events'
          ? kubelet.podEvents(segments[1]!, segments[2]!)
          : undefined;
      if (events) sendJson(res, 200, events);
      else sendText(res, 404, '404 page not found\n');
    },
  });
  table.addRoute({ path: '/runningpods/', handler: (_req, res) => sendJson(res, 200, runningPods(kubelet)) });
  table.addRoute({
    path: '/configz',
    handler: (_req, res) => sendJson(res, 200, { kubeletconfig: o.configz?.() ?? {} }),
  });
  table.addRoute({
    path: '/spec/',
    readOnly: true,
    handler: (_req, res) => sendJson(res, 200, machineInfo(kubelet)),
  });
  table.addRoute({ path: '/containerLogs/', handler: containerLogsHandler(kubelet, logger) });
  table.addRoute({ path: '/logs/', handler: nodeLogsHandler(o.logDir ?? '/var/log') });
  for (const path of ['/exec/', '/attach/', '/portForward/', '/run/']) {
    table.addRoute({
      path,
      methods: ['GET', 'POST'],
      handler: (_req, res) =>
        sendText(res, 501, `${path.slice(1, -1)} is not implemented by this kubelet yet\n`),
    });
    table.addUpgradeRoute(path, (_req, socket) =>
      rejectUpgrade(socket, 501, `${path.slice(1, -1)} is not implemented by this kubelet yet\n`),
    );
  }
}

/** A new route table with the kubelet's endpoints. */
export function kubeletRouteTable(
  kubelet: Kubelet,
  logger: Logger,
  o: KubeletRoutesOptions = {},
): RouteTable {
  const table = new RouteTable(logger);
  installKubeletRoutes(table, kubelet, logger, o);
  return table;
}

/** upstream syncLoopHealthCheck: the loop must have run within 2 × the resync interval (at least 5 min). */
export function syncLoopError(kubelet: Kubelet): string | undefined {
  const threshold = Math.max(2 * (kubelet.options.syncFrequencyMs ?? 60_000), minSyncLoopThresholdMs);
  const last = kubelet.latestLoopEntryTime;
  if (last === 0 || kubelet.clock.now() <= last + threshold) return undefined;
  return 'sync Loop took longer than expected';
}

/** upstream /runningpods/: the pods with a running container, as name, namespace, uid and containers. */
function runningPods(kubelet: Kubelet) {
  const items: Pod[] = kubelet
    .podList()
    .items.filter((p) => (p.status?.containerStatuses ?? []).some((c) => c.state?.running))
    .map((p) => ({
      metadata: {
        name: p.metadata?.name,
        namespace: p.metadata?.namespace ?? 'default',
        uid: p.metadata?.uid,
      },
      spec: {
        containers: (p.status?.containerStatuses ?? [])
          .filter((c) => c.state?.running)
          .map((c) => ({ name: c.name, image: c.image })),
      },
      status: {},
    }));
  return { kind: 'PodList', apiVersion: 'v1', metadata: {}, items };
}

const readTrimmed = (path: string) => {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return '';
  }
};

/** `/spec/`: the machine (cAdvisor MachineInfo's main fields). */
function machineInfo(kubelet: Kubelet) {
  const cores = cpus();
  return {
    timestamp: new Date(kubelet.clock.now()).toISOString(),
    num_cores: cores.length,
    cpu_frequency_khz: (cores[0]?.speed ?? 0) * 1000,
    memory_capacity: kubelet.options.memoryCapacityBytes ?? totalmem(),
    machine_id: readTrimmed('/etc/machine-id'),
    system_uuid: readTrimmed('/sys/class/dmi/id/product_uuid'),
    boot_id: readTrimmed('/proc/sys/kernel/random/boot_id'),
    hostname: hostname(),
  };
}
