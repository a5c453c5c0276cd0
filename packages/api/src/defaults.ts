import type { Pod } from './types.js';

/**
 * The defaults the API server fills into a pod on create (pkg/apis/core/v1/defaults.go), for pods that
 * never pass through an API server: static pods from files and URLs, and pods of the embedded control
 * plane. Returns a defaulted copy; the input is not changed. Fields already set are kept. Malformed parts
 * (a string where a list belongs) are left alone for validation to report.
 */
export function applyPodDefaults(pod: Pod): Pod {
  const out = structuredClone(pod) as Pod;
  if (!isObj(out.spec)) return out;
  const spec = out.spec as Obj;

  spec.restartPolicy ??= 'Always';
  spec.dnsPolicy ??= 'ClusterFirst';
  spec.terminationGracePeriodSeconds ??= 30;
  spec.schedulerName ??= 'default-scheduler';
  spec.securityContext ??= {};
  spec.enableServiceLinks ??= true;

  const hostNetwork = spec.hostNetwork === true;
  for (const key of ['initContainers', 'containers', 'ephemeralContainers']) {
    for (const c of list(spec[key])) if (isObj(c)) defaultContainer(c, hostNetwork);
  }
  for (const v of list(spec.volumes)) if (isObj(v)) defaultVolume(v);
  return out;
}

/** `Always` when the image has no tag or the tag `latest` (and no digest), else `IfNotPresent`. */
export function defaultImagePullPolicy(image: string): 'Always' | 'IfNotPresent' {
  if (image.includes('@')) return 'IfNotPresent';
  const lastPart = image.slice(image.lastIndexOf('/') + 1);
  const colon = lastPart.lastIndexOf(':');
  const tag = colon >= 0 ? lastPart.slice(colon + 1) : '';
  return tag === '' || tag === 'latest' ? 'Always' : 'IfNotPresent';
}

function defaultContainer(c: Obj, hostNetwork: boolean): void {
  if (typeof c.image === 'string') c.imagePullPolicy ??= defaultImagePullPolicy(c.image);
  c.terminationMessagePath ??= '/dev/termination-log';
  c.terminationMessagePolicy ??= 'File';

  for (const port of list(c.ports)) {
    if (!isObj(port)) continue;
    port.protocol ??= 'TCP';
    // With the host's network the container port is the host port.
    if (hostNetwork && (port.hostPort === undefined || port.hostPort === 0))
      port.hostPort = port.containerPort;
  }

  // Limits without requests: the requests are the limits.
  if (isObj(c.resources) && isObj(c.resources.limits)) {
    const requests = isObj(c.resources.requests) ? c.resources.requests : {};
    for (const [name, quantity] of Object.entries(c.resources.limits)) requests[name] ??= quantity;
    c.resources.requests = requests;
  }

  for (const key of ['livenessProbe', 'readinessProbe', 'startupProbe']) {
    if (isObj(c[key])) defaultProbe(c[key]);
  }
  if (isObj(c.lifecycle)) {
    for (const hook of [c.lifecycle.postStart, c.lifecycle.preStop]) {
      if (isObj(hook) && isObj(hook.httpGet)) defaultHttpGet(hook.httpGet);
    }
  }
  for (const env of list(c.env)) {
    if (isObj(env) && isObj(env.valueFrom) && isObj(env.valueFrom.fieldRef))
      env.valueFrom.fieldRef.apiVersion ??= 'v1';
  }
}

function defaultProbe(probe: Obj): void {
  probe.timeoutSeconds ??= 1;
  probe.periodSeconds ??= 10;
  probe.successThreshold ??= 1;
  probe.failureThreshold ??= 3;
  if (isObj(probe.httpGet)) defaultHttpGet(probe.httpGet);
}

function defaultHttpGet(action: Obj): void {
  action.path ??= '/';
  action.scheme ??= 'HTTP';
}

/** File mode 0644, the default of configMap, secret, downwardAPI and projected volumes. */
const defaultMode = 0o644;

function defaultVolume(v: Obj): void {
  for (const key of ['configMap', 'secret', 'downwardAPI', 'projected']) {
    if (isObj(v[key])) v[key].defaultMode ??= defaultMode;
  }
  if (isObj(v.hostPath)) v.hostPath.type ??= '';
}

type Obj = Record<string, any>;

function isObj(value: unknown): value is Obj {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}
