import { compareQuantities, roundUpToMilli, sumQuantities } from './quantity-exact.js';
import type { Pod } from './types.js';

/**
 * The defaults the API server fills into a pod on create — upstream's generated `SetObjectDefaults_Pod`
 * (pkg/apis/core/v1/zz_generated.defaults.go): the hand-written `SetDefaults_*` of
 * pkg/apis/core/v1/defaults.go plus the declarative `+default=` markers of k8s.io/api/core/v1/types.go —
 * for pods that never pass through an API server (static pods from files and URLs) and for pods of the
 * embedded control plane. Returns a defaulted copy; the input is not changed. Fields already set are
 * kept. Malformed parts (a string where a list belongs) are left alone for validation to report.
 *
 * Not applied: the image volume's `pullPolicy` (the ImageVolume feature gate is off by default in
 * v1.34), and pod-level limits derived from container limits (newer than v1.34).
 */
export function applyPodDefaults(pod: Pod): Pod {
  const out = structuredClone(pod) as Pod;
  if (!isObj(out.spec)) return out;
  const spec = out.spec as Obj;
  defaultPod(spec);
  defaultPodSpec(spec);
  for (const v of list(spec.volumes)) if (isObj(v)) defaultVolume(v);
  for (const key of ['initContainers', 'containers', 'ephemeralContainers']) {
    for (const c of list(spec[key])) if (isObj(c)) defaultContainer(c);
  }
  roundResourceList(spec, 'overhead');
  if (isObj(spec.resources)) {
    roundResourceList(spec.resources, 'limits');
    roundResourceList(spec.resources, 'requests');
  }
  return out;
}

/** SetDefaults_Pod: what only a Pod (not a pod template) gets. */
function defaultPod(spec: Obj): void {
  // Limits without requests: the requests are the limits (regular and init containers).
  for (const key of ['containers', 'initContainers']) {
    for (const c of list(spec[key])) {
      if (!isObj(c) || !isObj(c.resources) || !isObj(c.resources.limits)) continue;
      const requests = isObj(c.resources.requests) ? c.resources.requests : {};
      for (const [name, quantity] of Object.entries(c.resources.limits)) requests[name] ??= quantity;
      c.resources.requests = requests;
    }
  }
  defaultPodLevelRequests(spec);
  spec.enableServiceLinks ??= true;
  // With the host's network the container port is the host port.
  if (spec.hostNetwork === true) {
    for (const key of ['containers', 'initContainers']) {
      for (const c of list(spec[key])) {
        for (const port of isObj(c) ? list(c.ports) : []) {
          if (isObj(port) && (port.hostPort === undefined || port.hostPort === 0))
            port.hostPort = port.containerPort;
        }
      }
    }
  }
}

/** Resources a pod may set at pod level (PodLevelResources): the overcommittable ones get defaults here. */
const podLevelOvercommittable = ['cpu', 'memory'];

/**
 * defaultPodRequests: with pod-level limits set, a pod-level request left out is the containers'
 * effective request when some container requests it, else the pod-level limit.
 */
function defaultPodLevelRequests(spec: Obj): void {
  const resources = spec.resources;
  if (!isObj(resources) || !isObj(resources.limits) || Object.keys(resources.limits).length === 0) return;
  const requests: Obj = isObj(resources.requests) ? resources.requests : {};
  const effective = effectiveContainerRequests(spec);
  for (const name of podLevelOvercommittable) {
    if (requests[name] === undefined && effective[name] !== undefined) requests[name] = effective[name];
  }
  for (const [name, limit] of Object.entries(resources.limits)) {
    if (requests[name] === undefined && isPodLevelResource(name)) requests[name] = limit;
  }
  if (Object.keys(requests).length > 0) resources.requests = requests;
}

const isPodLevelResource = (name: string) =>
  name === 'cpu' || name === 'memory' || name.startsWith('hugepages-');

/**
 * The pod's effective requests per resource (AggregateContainerRequests): the regular and sidecar
 * containers' sum, or the largest init container (with the sidecars started before it) if that is more.
 */
function effectiveContainerRequests(spec: Obj): Record<string, string> {
  const requestsOf = (c: unknown): Obj =>
    isObj(c) && isObj(c.resources) && isObj(c.resources.requests) ? c.resources.requests : {};
  const add = (into: Record<string, string>, r: Obj) => {
    for (const [name, q] of Object.entries(r))
      into[name] = into[name] === undefined ? String(q) : sumQuantities([into[name], q]);
  };
  const larger = (into: Record<string, string>, r: Record<string, string>) => {
    for (const [name, q] of Object.entries(r))
      if (into[name] === undefined || compareQuantities(q, into[name]) > 0) into[name] = q;
  };
  const total: Record<string, string> = {};
  for (const c of list(spec.containers)) add(total, requestsOf(c));
  const sidecars: Record<string, string> = {};
  const initPeak: Record<string, string> = {};
  for (const c of list(spec.initContainers)) {
    const running: Record<string, string> = { ...sidecars };
    add(running, requestsOf(c));
    if (isObj(c) && c.restartPolicy === 'Always') {
      add(total, requestsOf(c));
      add(sidecars, requestsOf(c));
    }
    larger(initPeak, running);
  }
  larger(total, initPeak);
  return total;
}

/** SetDefaults_PodSpec. */
function defaultPodSpec(spec: Obj): void {
  spec.dnsPolicy ??= 'ClusterFirst';
  spec.restartPolicy ??= 'Always';
  spec.securityContext ??= {};
  spec.terminationGracePeriodSeconds ??= 30;
  spec.schedulerName ??= 'default-scheduler';
}

/**
 * `Always` when the image's tag is `latest` or it has neither tag nor digest, else `IfNotPresent` —
 * also for a name that does not parse as an image reference (upstream's ParseImageName then fails and
 * the tag reads as empty).
 */
export function defaultImagePullPolicy(image: string): 'Always' | 'IfNotPresent' {
  const ref = /^(.+?)(?::([\w][\w.-]{0,127}))?(?:@([a-z0-9]+(?:[.+_-][a-z0-9]+)*:[0-9a-fA-F]{32,}))?$/.exec(
    image,
  );
  if (!ref || !validRepository(ref[1]!)) return 'IfNotPresent';
  const [, , tag, digest] = ref;
  return tag === 'latest' || (!tag && !digest) ? 'Always' : 'IfNotPresent';
}

/** A repository name as the distribution reference grammar has it: [domain/]lower-case path components. */
function validRepository(name: string): boolean {
  const parts = name.split('/');
  const first = parts[0]!;
  const hasDomain = parts.length > 1 && (first.includes('.') || first.includes(':') || first === 'localhost');
  if (hasDomain && !/^[A-Za-z0-9.-]+(?::\d+)?$/.test(first)) return false;
  const path = hasDomain ? parts.slice(1) : parts;
  return path.every((p) => /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/.test(p));
}

/** SetDefaults_Container and what the generated defaulter applies inside a container. */
function defaultContainer(c: Obj): void {
  if (typeof c.image === 'string') c.imagePullPolicy ??= defaultImagePullPolicy(c.image);
  c.terminationMessagePath ??= '/dev/termination-log';
  c.terminationMessagePolicy ??= 'File';
  for (const port of list(c.ports)) if (isObj(port)) port.protocol ??= 'TCP';
  for (const env of list(c.env)) {
    if (isObj(env) && isObj(env.valueFrom)) defaultFieldRef(env.valueFrom);
  }
  if (isObj(c.resources)) {
    roundResourceList(c.resources, 'limits');
    roundResourceList(c.resources, 'requests');
  }
  for (const key of ['livenessProbe', 'readinessProbe', 'startupProbe']) {
    if (isObj(c[key])) defaultProbe(c[key]);
  }
  if (isObj(c.lifecycle)) {
    for (const hook of [c.lifecycle.postStart, c.lifecycle.preStop]) {
      if (isObj(hook) && isObj(hook.httpGet)) defaultHttpGet(hook.httpGet);
    }
  }
}

/** SetDefaults_Probe, with its handler's defaults (httpGet; grpc's `service` is `+default=""`). */
function defaultProbe(probe: Obj): void {
  probe.timeoutSeconds ??= 1;
  probe.periodSeconds ??= 10;
  probe.successThreshold ??= 1;
  probe.failureThreshold ??= 3;
  if (isObj(probe.httpGet)) defaultHttpGet(probe.httpGet);
  if (isObj(probe.grpc)) probe.grpc.service ??= '';
}

/** SetDefaults_HTTPGetAction. */
function defaultHttpGet(action: Obj): void {
  action.path ??= '/';
  action.scheme ??= 'HTTP';
}

/** SetDefaults_ObjectFieldSelector, on the `fieldRef` of an env var's or a downward API item's source. */
function defaultFieldRef(holder: Obj): void {
  if (isObj(holder.fieldRef)) holder.fieldRef.apiVersion ??= 'v1';
}

/** File mode 0644: the default of configMap, secret, downwardAPI and projected volumes. */
export const defaultVolumeFileMode = 0o644;

/** SetDefaults_Volume and the defaults of each volume source. */
function defaultVolume(v: Obj): void {
  if (Object.keys(v).every((k) => k === 'name')) v.emptyDir = {};
  for (const key of ['configMap', 'secret', 'downwardAPI', 'projected']) {
    if (isObj(v[key])) v[key].defaultMode ??= defaultVolumeFileMode;
  }
  if (isObj(v.hostPath)) v.hostPath.type ??= '';
  if (isObj(v.downwardAPI))
    for (const item of list(v.downwardAPI.items)) if (isObj(item)) defaultFieldRef(item);
  if (isObj(v.projected)) {
    for (const source of list(v.projected.sources)) {
      if (!isObj(source)) continue;
      if (isObj(source.downwardAPI))
        for (const item of list(source.downwardAPI.items)) if (isObj(item)) defaultFieldRef(item);
      // SetDefaults_ServiceAccountTokenProjection: one hour.
      if (isObj(source.serviceAccountToken)) source.serviceAccountToken.expirationSeconds ??= 3600;
    }
  }
  if (isObj(v.iscsi)) v.iscsi.iscsiInterface ??= 'default';
  if (isObj(v.rbd)) {
    v.rbd.pool ??= 'rbd';
    v.rbd.user ??= 'admin';
    v.rbd.keyring ??= '/etc/ceph/keyring';
  }
  if (isObj(v.azureDisk)) {
    v.azureDisk.cachingMode ??= 'ReadWrite';
    v.azureDisk.fsType ??= 'ext4';
    v.azureDisk.readOnly ??= false;
    v.azureDisk.kind ??= 'Shared';
  }
  if (isObj(v.scaleIO)) {
    v.scaleIO.storageMode ??= 'ThinProvisioned';
    v.scaleIO.fsType ??= 'xfs';
  }
  const claim = isObj(v.ephemeral) ? v.ephemeral.volumeClaimTemplate : undefined;
  if (isObj(claim) && isObj(claim.spec)) {
    // SetDefaults_PersistentVolumeClaimSpec.
    claim.spec.volumeMode ??= 'Filesystem';
    if (isObj(claim.spec.resources)) {
      roundResourceList(claim.spec.resources, 'limits');
      roundResourceList(claim.spec.resources, 'requests');
    }
  }
}

/** SetDefaults_ResourceList: every quantity rounded up to a multiple of 1m. */
function roundResourceList(holder: Obj, key: string): void {
  const resources = holder[key];
  if (!isObj(resources)) return;
  for (const [name, q] of Object.entries(resources)) {
    if (typeof q === 'string' || typeof q === 'number') resources[name] = roundUpToMilli(q);
  }
}

type Obj = Record<string, any>;

function isObj(value: unknown): value is Obj {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}
