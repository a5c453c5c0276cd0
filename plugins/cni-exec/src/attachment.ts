/** One pod's attachment to a network as CNI sees it: its parameters, CNI_ARGS, a plugin's stdin, error text. */
import { CniError, type CniCommand, type CniErrorBody, type PodNetworkRequest } from '@nodelet/cni';
import { CNI_NAME, type NetworkConfigList, type PluginConf } from './network-config.js';

/** The per-attachment parameters of the CNI spec, derived from a request. */
export interface Attachment {
  readonly containerId: string;
  readonly ifName: string;
  readonly netns: string;
  readonly cniArgs: string;
  readonly capabilityArgs: Readonly<Record<string, unknown>>;
  readonly pod: string;
}

/** `CNI plugin bridge (network "nodelet" in /etc/cni/net.d/10-nodelet.conflist)`. */
export function where(type: string, net: NetworkConfigList): string {
  return `CNI plugin ${type} (network "${net.name}" in ${net.path})`;
}

/**
 * The configuration one plugin gets on stdin: its own object from the list, with the list's
 * `cniVersion` and `name`, the capability arguments it declared as `runtimeConfig`, and `prevResult`.
 * `capabilities` is taken out (the spec: not set in a request); every other field passes unchanged.
 */
export function requestConfig(
  net: NetworkConfigList,
  plugin: PluginConf,
  capabilityArgs: Readonly<Record<string, unknown>>,
  prevResult: unknown,
): Record<string, unknown> {
  const { capabilities, ...rest } = plugin as Record<string, unknown>;
  const request: Record<string, unknown> = { ...rest, cniVersion: net.cniVersion, name: net.name };
  const declared =
    typeof capabilities === 'object' && capabilities !== null
      ? (capabilities as Record<string, unknown>)
      : {};
  const runtimeConfig = Object.fromEntries(
    Object.entries(capabilityArgs).filter(([key]) => declared[key] === true),
  );
  if (Object.keys(runtimeConfig).length > 0) request.runtimeConfig = runtimeConfig;
  if (prevResult !== undefined) request.prevResult = prevResult;
  return request;
}

/** The kubelet's and containerd's CNI_ARGS: pod identity for plugins that want it, unknown keys allowed. */
export function cniArgs(req: PodNetworkRequest): string {
  const pairs: [string, string][] = [
    ['K8S_POD_NAMESPACE', req.namespace],
    ['K8S_POD_NAME', req.podName],
    ['K8S_POD_INFRA_CONTAINER_ID', req.containerId],
    ['K8S_POD_UID', req.podUid],
    ['IgnoreUnknown', '1'],
  ];
  for (const [key, value] of pairs) {
    if (/[;=]/.test(value)) {
      throw new CniError(
        'InvalidInput',
        `${key} "${value}" cannot be passed in CNI_ARGS: it contains ";" or "="`,
      );
    }
  }
  return pairs.map(([k, v]) => `${k}=${v}`).join(';');
}

export function attachment(req: PodNetworkRequest, command: CniCommand): Attachment {
  const bad = (why: string) => new CniError('InvalidInput', `CNI ${command} refused: ${why}`, { command });
  if (!req.containerId || !CNI_NAME.test(req.containerId)) {
    throw bad(
      `container id "${req.containerId}" must start with a letter or digit, then letters, digits, "_", "." or "-"`,
    );
  }
  const ifName = req.ifName ?? 'eth0';
  if (!ifName || ifName.length > 15 || ifName === '.' || ifName === '..' || /[/:\s]/.test(ifName)) {
    throw bad(
      `interface name "${ifName}" must be 1–15 characters, not "." or "..", without "/", ":" or spaces`,
    );
  }
  if (command !== 'DEL' && !req.netnsPath) throw bad('netnsPath is required');
  const capabilityArgs: Record<string, unknown> = { ...req.capabilityArgs };
  const ports = (req.portMappings ?? []).filter((p) => p.hostPort > 0);
  if (ports.length > 0) {
    capabilityArgs.portMappings = ports.map((p) => ({
      hostPort: p.hostPort,
      containerPort: p.containerPort,
      protocol: (p.protocol ?? 'TCP').toLowerCase(),
      ...(p.hostIP ? { hostIP: p.hostIP } : {}),
    }));
  }
  return {
    containerId: req.containerId,
    ifName,
    netns: req.netnsPath ?? '',
    cniArgs: cniArgs(req),
    capabilityArgs,
    pod: `${req.namespace}/${req.podName}`,
  };
}

/** The plugin's `{code, msg, details}` from stdout, if that is what it printed. */
export function errorBody(stdout: string): CniErrorBody | undefined {
  try {
    const v = JSON.parse(stdout) as Partial<CniErrorBody>;
    if (typeof v === 'object' && v !== null && typeof v.code === 'number' && typeof v.msg === 'string') {
      return {
        code: v.code,
        msg: v.msg,
        ...(typeof v.details === 'string' ? { details: v.details } : {}),
        ...(typeof v.cniVersion === 'string' ? { cniVersion: v.cniVersion } : {}),
      };
    }
  } catch {
    // not an error object
  }
  return undefined;
}

export function tail(stderr: string): string {
  const s = stderr.trim();
  return s ? `; its stderr: ${s.slice(-1000)}` : '';
}
