import test from 'ava';
import { applyPodDefaults, defaultImagePullPolicy } from './defaults.js';
import { compareQuantities, roundUpToMilli, sumQuantities } from './quantity-exact.js';
import type { Pod } from './types.js';

// One row per default upstream applies to a Pod (pkg/apis/core/v1/defaults.go and the `+default=`
// markers of k8s.io/api/core/v1/types.go, as wired by zz_generated.defaults.go): the field, a pod
// without it, and the value the API server fills in.

type Obj = Record<string, any>;

const container = (extra: Obj = {}): Obj => ({ name: 'c', image: 'busybox:1.36', ...extra });
const withSpec = (spec: Obj): Pod =>
  ({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec }) as Pod;
const withContainer = (extra: Obj, spec: Obj = {}) => withSpec({ containers: [container(extra)], ...spec });
const withVolume = (volume: Obj) =>
  withSpec({ containers: [container()], volumes: [{ name: 'v', ...volume }] });
const probe = (handler: Obj) => ({ ...handler });

interface Row {
  upstream: string;
  pod: Pod;
  path: string;
  want: unknown;
  /** The default rewrites a value that is there (rounding) instead of filling a missing one. */
  rewrites?: true;
}

const rows: Row[] = [
  // SetDefaults_PodSpec
  { upstream: 'SetDefaults_PodSpec', pod: withContainer({}), path: 'spec.dnsPolicy', want: 'ClusterFirst' },
  { upstream: 'SetDefaults_PodSpec', pod: withContainer({}), path: 'spec.restartPolicy', want: 'Always' },
  { upstream: 'SetDefaults_PodSpec', pod: withContainer({}), path: 'spec.securityContext', want: {} },
  {
    upstream: 'SetDefaults_PodSpec',
    pod: withContainer({}),
    path: 'spec.terminationGracePeriodSeconds',
    want: 30,
  },
  {
    upstream: 'SetDefaults_PodSpec',
    pod: withContainer({}),
    path: 'spec.schedulerName',
    want: 'default-scheduler',
  },
  // SetDefaults_Pod
  { upstream: 'SetDefaults_Pod', pod: withContainer({}), path: 'spec.enableServiceLinks', want: true },
  {
    upstream: 'SetDefaults_Pod (requests from limits, containers)',
    pod: withContainer({ resources: { limits: { cpu: '1', memory: '64Mi' }, requests: { cpu: '500m' } } }),
    path: 'spec.containers[0].resources.requests',
    rewrites: true,
    want: { cpu: '500m', memory: '64Mi' },
  },
  {
    upstream: 'SetDefaults_Pod (requests from limits, init containers)',
    pod: withSpec({
      containers: [container()],
      initContainers: [container({ resources: { limits: { cpu: '2' } } })],
    }),
    path: 'spec.initContainers[0].resources.requests',
    want: { cpu: '2' },
  },
  {
    upstream: 'SetDefaults_Pod (hostNetwork: hostPort = containerPort)',
    pod: withContainer({ ports: [{ containerPort: 8080 }] }, { hostNetwork: true }),
    path: 'spec.containers[0].ports[0].hostPort',
    want: 8080,
  },
  {
    upstream: 'SetDefaults_Pod (hostNetwork, init containers)',
    pod: withSpec({
      hostNetwork: true,
      containers: [container()],
      initContainers: [container({ ports: [{ containerPort: 53 }] })],
    }),
    path: 'spec.initContainers[0].ports[0].hostPort',
    want: 53,
  },
  {
    upstream: 'defaultPodRequests (from the containers’ requests)',
    pod: withSpec({
      resources: { limits: { cpu: '4', memory: '1Gi' } },
      containers: [
        container({ resources: { requests: { cpu: '1' } } }),
        container({ name: 'd', resources: { requests: { cpu: '500m' } } }),
      ],
      initContainers: [container({ name: 'i', resources: { requests: { cpu: '1200m' } } })],
    }),
    path: 'spec.resources.requests',
    want: { cpu: '1500m', memory: '1Gi' },
  },
  {
    upstream: 'defaultPodRequests (an init container larger than the rest)',
    pod: withSpec({
      resources: { limits: { memory: '1Gi' } },
      containers: [container({ resources: { requests: { memory: '64Mi' } } })],
      initContainers: [
        container({ name: 's', restartPolicy: 'Always', resources: { requests: { memory: '64Mi' } } }),
        container({ name: 'i', resources: { requests: { memory: '256Mi' } } }),
      ],
    }),
    path: 'spec.resources.requests',
    want: { memory: '320Mi' },
  },
  // SetDefaults_Container
  {
    upstream: 'SetDefaults_Container (tagged)',
    pod: withContainer({}),
    path: 'spec.containers[0].imagePullPolicy',
    want: 'IfNotPresent',
  },
  {
    upstream: 'SetDefaults_Container (latest)',
    pod: withContainer({ image: 'busybox' }),
    path: 'spec.containers[0].imagePullPolicy',
    want: 'Always',
  },
  {
    upstream: 'SetDefaults_Container',
    pod: withContainer({}),
    path: 'spec.containers[0].terminationMessagePath',
    want: '/dev/termination-log',
  },
  {
    upstream: 'SetDefaults_Container',
    pod: withContainer({}),
    path: 'spec.containers[0].terminationMessagePolicy',
    want: 'File',
  },
  {
    upstream: 'SetDefaults_EphemeralContainer',
    pod: withSpec({ containers: [container()], ephemeralContainers: [{ name: 'debug', image: 'busybox' }] }),
    path: 'spec.ephemeralContainers[0].imagePullPolicy',
    want: 'Always',
  },
  {
    upstream: 'ContainerPort.protocol +default="TCP"',
    pod: withContainer({ ports: [{ containerPort: 80 }] }),
    path: 'spec.containers[0].ports[0].protocol',
    want: 'TCP',
  },
  {
    upstream: 'SetDefaults_ObjectFieldSelector (env)',
    pod: withContainer({ env: [{ name: 'N', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }] }),
    path: 'spec.containers[0].env[0].valueFrom.fieldRef.apiVersion',
    want: 'v1',
  },
  {
    upstream: 'SetDefaults_ResourceList (container limits)',
    pod: withContainer({ resources: { limits: { cpu: '100u' } } }),
    path: 'spec.containers[0].resources.limits.cpu',
    rewrites: true,
    want: '1m',
  },
  {
    upstream: 'SetDefaults_ResourceList (container requests)',
    pod: withContainer({ resources: { requests: { cpu: '0.0015' } } }),
    path: 'spec.containers[0].resources.requests.cpu',
    rewrites: true,
    want: '2m',
  },
  {
    upstream: 'SetDefaults_ResourceList (overhead)',
    pod: withContainer({}, { overhead: { cpu: '1n' } }),
    path: 'spec.overhead.cpu',
    rewrites: true,
    want: '1m',
  },
  // Probes and hooks
  {
    upstream: 'SetDefaults_Probe',
    pod: withContainer({ livenessProbe: probe({ exec: { command: ['true'] } }) }),
    path: 'spec.containers[0].livenessProbe.timeoutSeconds',
    want: 1,
  },
  {
    upstream: 'SetDefaults_Probe',
    pod: withContainer({ readinessProbe: probe({ exec: { command: ['true'] } }) }),
    path: 'spec.containers[0].readinessProbe.periodSeconds',
    want: 10,
  },
  {
    upstream: 'SetDefaults_Probe',
    pod: withContainer({ startupProbe: probe({ exec: { command: ['true'] } }) }),
    path: 'spec.containers[0].startupProbe.successThreshold',
    want: 1,
  },
  {
    upstream: 'SetDefaults_Probe',
    pod: withContainer({ livenessProbe: probe({ tcpSocket: { port: 80 } }) }),
    path: 'spec.containers[0].livenessProbe.failureThreshold',
    want: 3,
  },
  {
    upstream: 'SetDefaults_HTTPGetAction (probe)',
    pod: withContainer({ livenessProbe: probe({ httpGet: { port: 80 } }) }),
    path: 'spec.containers[0].livenessProbe.httpGet.path',
    want: '/',
  },
  {
    upstream: 'SetDefaults_HTTPGetAction (probe)',
    pod: withContainer({ readinessProbe: probe({ httpGet: { port: 80 } }) }),
    path: 'spec.containers[0].readinessProbe.httpGet.scheme',
    want: 'HTTP',
  },
  {
    upstream: 'GRPCAction.service +default=""',
    pod: withContainer({ livenessProbe: probe({ grpc: { port: 9000 } }) }),
    path: 'spec.containers[0].livenessProbe.grpc.service',
    want: '',
  },
  {
    upstream: 'GRPCAction.service +default="" (startup)',
    pod: withContainer({ startupProbe: probe({ grpc: { port: 9000 } }) }),
    path: 'spec.containers[0].startupProbe.grpc.service',
    want: '',
  },
  {
    upstream: 'SetDefaults_HTTPGetAction (postStart)',
    pod: withContainer({ lifecycle: { postStart: { httpGet: { port: 80 } } } }),
    path: 'spec.containers[0].lifecycle.postStart.httpGet.scheme',
    want: 'HTTP',
  },
  {
    upstream: 'SetDefaults_HTTPGetAction (preStop, init container)',
    pod: withSpec({
      containers: [container()],
      initContainers: [container({ lifecycle: { preStop: { httpGet: { port: 80 } } } })],
    }),
    path: 'spec.initContainers[0].lifecycle.preStop.httpGet.path',
    want: '/',
  },
  // Volumes
  {
    upstream: 'SetDefaults_Volume (no source: emptyDir)',
    pod: withVolume({}),
    path: 'spec.volumes[0].emptyDir',
    want: {},
  },
  {
    upstream: 'SetDefaults_HostPathVolumeSource',
    pod: withVolume({ hostPath: { path: '/data' } }),
    path: 'spec.volumes[0].hostPath.type',
    want: '',
  },
  {
    upstream: 'SetDefaults_SecretVolumeSource',
    pod: withVolume({ secret: { secretName: 's' } }),
    path: 'spec.volumes[0].secret.defaultMode',
    want: 420,
  },
  {
    upstream: 'SetDefaults_ConfigMapVolumeSource',
    pod: withVolume({ configMap: { name: 'c' } }),
    path: 'spec.volumes[0].configMap.defaultMode',
    want: 420,
  },
  {
    upstream: 'SetDefaults_DownwardAPIVolumeSource',
    pod: withVolume({ downwardAPI: { items: [] } }),
    path: 'spec.volumes[0].downwardAPI.defaultMode',
    want: 420,
  },
  {
    upstream: 'SetDefaults_ObjectFieldSelector (downwardAPI item)',
    pod: withVolume({ downwardAPI: { items: [{ path: 'n', fieldRef: { fieldPath: 'metadata.name' } }] } }),
    path: 'spec.volumes[0].downwardAPI.items[0].fieldRef.apiVersion',
    want: 'v1',
  },
  {
    upstream: 'SetDefaults_ProjectedVolumeSource',
    pod: withVolume({ projected: { sources: [] } }),
    path: 'spec.volumes[0].projected.defaultMode',
    want: 420,
  },
  {
    upstream: 'SetDefaults_ServiceAccountTokenProjection',
    pod: withVolume({ projected: { sources: [{ serviceAccountToken: { path: 'token' } }] } }),
    path: 'spec.volumes[0].projected.sources[0].serviceAccountToken.expirationSeconds',
    want: 3600,
  },
  {
    upstream: 'SetDefaults_ObjectFieldSelector (projected downwardAPI item)',
    pod: withVolume({
      projected: {
        sources: [
          { downwardAPI: { items: [{ path: 'ns', fieldRef: { fieldPath: 'metadata.namespace' } }] } },
        ],
      },
    }),
    path: 'spec.volumes[0].projected.sources[0].downwardAPI.items[0].fieldRef.apiVersion',
    want: 'v1',
  },
  {
    upstream: 'ISCSIVolumeSource.iscsiInterface +default',
    pod: withVolume({ iscsi: { targetPortal: 'p', iqn: 'q', lun: 0 } }),
    path: 'spec.volumes[0].iscsi.iscsiInterface',
    want: 'default',
  },
  {
    upstream: 'RBDVolumeSource.pool +default',
    pod: withVolume({ rbd: { monitors: ['m'], image: 'i' } }),
    path: 'spec.volumes[0].rbd.pool',
    want: 'rbd',
  },
  {
    upstream: 'RBDVolumeSource.user +default',
    pod: withVolume({ rbd: { monitors: ['m'], image: 'i' } }),
    path: 'spec.volumes[0].rbd.user',
    want: 'admin',
  },
  {
    upstream: 'RBDVolumeSource.keyring +default',
    pod: withVolume({ rbd: { monitors: ['m'], image: 'i' } }),
    path: 'spec.volumes[0].rbd.keyring',
    want: '/etc/ceph/keyring',
  },
  {
    upstream: 'AzureDiskVolumeSource.cachingMode +default',
    pod: withVolume({ azureDisk: { diskName: 'd', diskURI: 'u' } }),
    path: 'spec.volumes[0].azureDisk.cachingMode',
    want: 'ReadWrite',
  },
  {
    upstream: 'AzureDiskVolumeSource.fsType +default',
    pod: withVolume({ azureDisk: { diskName: 'd', diskURI: 'u' } }),
    path: 'spec.volumes[0].azureDisk.fsType',
    want: 'ext4',
  },
  {
    upstream: 'AzureDiskVolumeSource.readOnly +default',
    pod: withVolume({ azureDisk: { diskName: 'd', diskURI: 'u' } }),
    path: 'spec.volumes[0].azureDisk.readOnly',
    want: false,
  },
  {
    upstream: 'AzureDiskVolumeSource.kind +default',
    pod: withVolume({ azureDisk: { diskName: 'd', diskURI: 'u' } }),
    path: 'spec.volumes[0].azureDisk.kind',
    want: 'Shared',
  },
  {
    upstream: 'ScaleIOVolumeSource.storageMode +default',
    pod: withVolume({ scaleIO: { gateway: 'g', system: 's', secretRef: { name: 'x' } } }),
    path: 'spec.volumes[0].scaleIO.storageMode',
    want: 'ThinProvisioned',
  },
  {
    upstream: 'ScaleIOVolumeSource.fsType +default',
    pod: withVolume({ scaleIO: { gateway: 'g', system: 's', secretRef: { name: 'x' } } }),
    path: 'spec.volumes[0].scaleIO.fsType',
    want: 'xfs',
  },
  {
    upstream: 'SetDefaults_PersistentVolumeClaimSpec (ephemeral)',
    pod: withVolume({
      ephemeral: {
        volumeClaimTemplate: {
          spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
        },
      },
    }),
    path: 'spec.volumes[0].ephemeral.volumeClaimTemplate.spec.volumeMode',
    want: 'Filesystem',
  },
];

function at(obj: unknown, path: string): unknown {
  let cur: any = obj;
  for (const part of path.split(/\.|(?=\[)/)) {
    if (cur === undefined || cur === null) return undefined;
    const index = /^\[(\d+)\]$/.exec(part);
    cur = index ? cur[Number(index[1])] : cur[part];
  }
  return cur;
}

for (const row of rows) {
  test(`${row.upstream}: ${row.path} defaults to ${JSON.stringify(row.want)}`, (t) => {
    if (!row.rewrites) t.is(at(row.pod, row.path), undefined, 'the input lacks the field');
    t.deepEqual(at(applyPodDefaults(row.pod), row.path), row.want);
  });
}

test('a value that is set is kept, and the input is not changed', (t) => {
  const pod = withContainer(
    {
      imagePullPolicy: 'Never',
      livenessProbe: { grpc: { port: 9000, service: 'health' }, periodSeconds: 5 },
    },
    { dnsPolicy: 'Default', volumes: [{ name: 's', secret: { secretName: 's', defaultMode: 0o400 } }] },
  );
  const before = structuredClone(pod);
  const out = applyPodDefaults(pod);
  t.deepEqual(pod, before);
  t.is(at(out, 'spec.dnsPolicy'), 'Default');
  t.is(at(out, 'spec.containers[0].imagePullPolicy'), 'Never');
  t.is(at(out, 'spec.containers[0].livenessProbe.grpc.service'), 'health');
  t.is(at(out, 'spec.containers[0].livenessProbe.periodSeconds'), 5);
  t.is(at(out, 'spec.volumes[0].secret.defaultMode'), 0o400);
  t.is(at(out, 'spec.volumes[0].emptyDir'), undefined, 'a volume with a source gets no emptyDir');
});

test('the limits-to-requests default is not applied to ephemeral containers, nor hostPort to their ports', (t) => {
  const out = applyPodDefaults(
    withSpec({
      hostNetwork: true,
      containers: [container()],
      ephemeralContainers: [{ name: 'd', image: 'busybox', ports: [{ containerPort: 7 }] }],
    }),
  );
  t.is(at(out, 'spec.ephemeralContainers[0].ports[0].hostPort'), undefined);
  t.is(at(out, 'spec.ephemeralContainers[0].ports[0].protocol'), 'TCP');
});

test('defaultImagePullPolicy follows ParseImageName: latest, no tag and no digest → Always', (t) => {
  t.is(defaultImagePullPolicy('nginx'), 'Always');
  t.is(defaultImagePullPolicy('nginx:latest'), 'Always');
  t.is(defaultImagePullPolicy('localhost:5000/nginx'), 'Always');
  t.is(defaultImagePullPolicy('localhost:5000/nginx:1.2'), 'IfNotPresent');
  t.is(defaultImagePullPolicy('nginx@sha256:' + 'a'.repeat(64)), 'IfNotPresent');
  t.is(defaultImagePullPolicy('nginx:latest@sha256:' + 'a'.repeat(64)), 'Always');
  t.is(defaultImagePullPolicy('Nginx'), 'IfNotPresent', 'not a reference: the tag reads as empty');
});

test('quantities: rounding up to 1m and sums are exact', (t) => {
  t.is(roundUpToMilli('500m'), '500m');
  t.is(roundUpToMilli('0.29'), '0.29');
  t.is(roundUpToMilli('1.0001'), '1001m');
  t.is(roundUpToMilli('1Ki'), '1Ki');
  t.is(roundUpToMilli(2), 2);
  t.is(sumQuantities(['64Mi', '64Mi']), '128Mi');
  t.is(sumQuantities(['0.1', '0.2']), '300m');
  t.is(sumQuantities(['1', '2']), '3');
  t.is(compareQuantities('1Gi', '1G'), 1);
  t.is(compareQuantities('1000m', '1'), 0);
  t.throws(() => roundUpToMilli('1.2.3'), { message: /quantity "1.2.3" is not valid/ });
});
