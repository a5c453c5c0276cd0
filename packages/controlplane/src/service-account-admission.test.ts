import test from 'ava';
import type { RequestUser } from './apiserver/resource-type.js';
import type { KubeObject } from './object.js';
import { refusal, startCluster, type TestCluster } from './test-helpers.js';

// The ServiceAccount admission step (and NodeRestriction's mirror-pod rules), through the registry's
// create: the same path as POST /api/v1/namespaces/<ns>/pods.

let c: TestCluster;

test.before(async () => {
  c = await startCluster();
});

test.after.always(async () => {
  await c?.destroy();
});

const reg = () => c.cp.registry;
const create = (storage: string, ns: string, body: object, user?: RequestUser) =>
  reg().create(reg().byStorage(storage), ns, body, user ? { user } : {}).object;

let seq = 0;
function namespace(): string {
  const name = `sa-${++seq}`;
  create('namespaces', '', { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
  return name;
}

const pod = (spec: Record<string, unknown> = {}, metadata: Record<string, unknown> = {}) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'p', ...metadata },
  spec: { containers: [{ name: 'c', image: 'busybox:1.36' }], ...spec },
});

const mountPath = '/var/run/secrets/kubernetes.io/serviceaccount';

test('a pod created right after its namespace gets serviceAccountName default and the kube-api-access volume', (t) => {
  const ns = namespace(); // no turn of the event loop: the namespace controller has not run yet
  const p = create('pods', ns, pod({ initContainers: [{ name: 'init', image: 'busybox:1.36' }] }));
  t.is(p.spec.serviceAccountName, 'default');
  t.is(p.spec.serviceAccount, 'default', 'the deprecated field mirrors it');
  const volumes = p.spec.volumes as KubeObject[];
  t.is(volumes.length, 1);
  const volume = volumes[0]!;
  t.regex(volume.name as string, /^kube-api-access-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
  t.deepEqual(volume.projected, {
    defaultMode: 420,
    sources: [
      { serviceAccountToken: { path: 'token', expirationSeconds: 3607 } },
      { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
      {
        downwardAPI: {
          items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }],
        },
      },
    ],
  });
  for (const container of [...p.spec.containers, ...p.spec.initContainers]) {
    t.deepEqual(container.volumeMounts, [{ name: volume.name, readOnly: true, mountPath }], container.name);
  }
  t.truthy(reg().store.get('configmaps', ns, 'kube-root-ca.crt'), 'the root CA ConfigMap came with it');
});

test('a pod naming a ServiceAccount that does not exist is refused as upstream refuses it', (t) => {
  const ns = namespace();
  const err = refusal(() => create('pods', ns, pod({ serviceAccountName: 'robot' }, { name: 'web' })));
  t.is(err.code, 403);
  t.is(err.reason, 'Forbidden');
  t.is(
    err.message,
    `pods "web" is forbidden: error looking up service account ${ns}/robot: serviceaccount "robot" not found`,
  );
  const generated = refusal(() =>
    create('pods', ns, pod({ serviceAccount: 'robot' }, { name: undefined, generateName: 'web-' })),
  );
  t.regex(
    generated.message,
    /^pods "web-" is forbidden: .*serviceaccount "robot" not found$/,
    'the deprecated field counts too',
  );
});

test('a named ServiceAccount that exists is used, and its imagePullSecrets go to a pod that has none', (t) => {
  const ns = namespace();
  create('serviceaccounts', ns, {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name: 'robot' },
    imagePullSecrets: [{ name: 'registry-a' }, { name: 'registry-b' }],
  });
  const p = create('pods', ns, pod({ serviceAccountName: 'robot' }, { name: 'a' }));
  t.is(p.spec.serviceAccountName, 'robot');
  t.deepEqual(p.spec.imagePullSecrets, [{ name: 'registry-a' }, { name: 'registry-b' }]);
  const own = create(
    'pods',
    ns,
    pod({ serviceAccountName: 'robot', imagePullSecrets: [{ name: 'mine' }] }, { name: 'b' }),
  );
  t.deepEqual(own.spec.imagePullSecrets, [{ name: 'mine' }], 'a pod with its own keeps them');
});

test('automountServiceAccountToken: false on the pod, or on its ServiceAccount unless the pod says true', (t) => {
  const ns = namespace();
  create('serviceaccounts', ns, {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name: 'quiet' },
    automountServiceAccountToken: false,
  });
  const offOnPod = create('pods', ns, pod({ automountServiceAccountToken: false }, { name: 'a' }));
  t.is(offOnPod.spec.volumes, undefined);
  t.is(offOnPod.spec.containers[0].volumeMounts, undefined);
  const offOnAccount = create('pods', ns, pod({ serviceAccountName: 'quiet' }, { name: 'b' }));
  t.is(offOnAccount.spec.volumes, undefined);
  const podWins = create(
    'pods',
    ns,
    pod({ serviceAccountName: 'quiet', automountServiceAccountToken: true }, { name: 'c' }),
  );
  t.is(podWins.spec.volumes.length, 1, "the pod's choice wins over its ServiceAccount's");
});

test('a container that already mounts something at the token path keeps it; the volume comes only if another needs it', (t) => {
  const ns = namespace();
  const own = { name: 'own', mountPath, readOnly: true };
  const volumes = [{ name: 'own', emptyDir: {} }];
  const alone = create(
    'pods',
    ns,
    pod({ volumes, containers: [{ name: 'c', image: 'busybox:1.36', volumeMounts: [own] }] }, { name: 'a' }),
  );
  t.deepEqual(
    alone.spec.volumes.map((v: KubeObject) => v.name),
    ['own'],
  );
  t.deepEqual(alone.spec.containers[0].volumeMounts, [own]);
  const mixed = create(
    'pods',
    ns,
    pod(
      {
        volumes,
        containers: [
          { name: 'c', image: 'busybox:1.36', volumeMounts: [own] },
          { name: 'd', image: 'busybox:1.36' },
        ],
      },
      { name: 'b' },
    ),
  );
  t.is(mixed.spec.volumes.length, 2);
  t.deepEqual(mixed.spec.containers[0].volumeMounts, [own]);
  t.is(mixed.spec.containers[1].volumeMounts[0].mountPath, mountPath);
});

test('a pod that already has a kube-api-access-* volume gets mounts of it, not a second one', (t) => {
  const ns = namespace();
  const p = create('pods', ns, pod({ volumes: [{ name: 'kube-api-access-abcde', emptyDir: {} }] }));
  t.deepEqual(p.spec.volumes, [{ name: 'kube-api-access-abcde', emptyDir: {} }]);
  t.is(p.spec.containers[0].volumeMounts[0].name, 'kube-api-access-abcde');
});

const mirror = { annotations: { 'kubernetes.io/config.mirror': 'abc123' } };

test('a mirror pod gets none of it: no ServiceAccount, no volume, no pull secrets', (t) => {
  const ns = namespace();
  create('serviceaccounts', ns, {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name: 'default-extra' },
  });
  const p = create('pods', ns, pod({}, { name: 'static-node1', ...mirror }));
  t.is(p.spec.serviceAccountName, undefined);
  t.is(p.spec.serviceAccount, undefined);
  t.is(p.spec.volumes, undefined);
  t.is(p.spec.containers[0].volumeMounts, undefined);
});

test('a mirror pod that references a ServiceAccount, a Secret or a token projection is refused', (t) => {
  const ns = namespace();
  const cases: [Record<string, unknown>, string][] = [
    [{ serviceAccountName: 'default' }, 'a mirror pod may not reference service accounts'],
    [{ serviceAccount: 'default' }, 'a mirror pod may not reference service accounts'],
    [{ volumes: [{ name: 's', secret: { secretName: 'x' } }] }, 'a mirror pod may not reference secrets'],
    [{ imagePullSecrets: [{ name: 'r' }] }, 'a mirror pod may not reference secrets'],
    [
      {
        containers: [
          {
            name: 'c',
            image: 'busybox:1.36',
            env: [{ name: 'E', valueFrom: { secretKeyRef: { name: 'x', key: 'k' } } }],
          },
        ],
      },
      'a mirror pod may not reference secrets',
    ],
    [
      { volumes: [{ name: 't', projected: { sources: [{ serviceAccountToken: { path: 'token' } }] } }] },
      'a mirror pod may not use ServiceAccountToken volume projections',
    ],
  ];
  for (const [spec, why] of cases) {
    const err = refusal(() => create('pods', ns, pod(spec, { name: 'static-node1', ...mirror })));
    t.is(err.code, 403);
    t.is(err.message, `pods "static-node1" is forbidden: ${why}`, JSON.stringify(spec));
  }
});

test('NodeRestriction: a node may create the mirror pod of its own node, referencing no ConfigMap', (t) => {
  const ns = namespace();
  const node: RequestUser = { name: 'system:node:node1', groups: ['system:nodes', 'system:authenticated'] };
  const uid = create('nodes', '', { apiVersion: 'v1', kind: 'Node', metadata: { name: 'node1' } }).metadata
    .uid;
  // A mirror pod is owned by its Node, as the kubelet writes it.
  const owned = {
    ...mirror,
    ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: 'node1', uid, controller: true }],
  };
  const ok = create('pods', ns, pod({ nodeName: 'node1' }, { name: 'static-node1', ...owned }), node);
  t.is(ok.metadata.name, 'static-node1');
  const unowned = refusal(() =>
    create('pods', ns, pod({ nodeName: 'node1' }, { name: 'u', ...mirror }), node),
  );
  t.is(
    unowned.message,
    'pods "u" is forbidden: node "node1" can only create pods with an owner reference set to itself',
  );
  const plain = refusal(() => create('pods', ns, pod({ nodeName: 'node1' }, { name: 'v' }), node));
  t.is(
    plain.message,
    'pods "v" is forbidden: pod does not have "kubernetes.io/config.mirror" annotation, node "node1" can only create mirror pods',
  );
  const configMap = refusal(() =>
    create(
      'pods',
      ns,
      pod(
        { nodeName: 'node1', volumes: [{ name: 'c', configMap: { name: 'settings' } }] },
        { name: 'x', ...owned },
      ),
      node,
    ),
  );
  t.is(
    configMap.message,
    'pods "x" is forbidden: node "node1" can not create pods that reference configmaps',
  );
  const other = refusal(() => create('pods', ns, pod({ nodeName: 'node2' }, { name: 'y', ...owned }), node));
  t.is(
    other.message,
    'pods "y" is forbidden: node "node1" can only create pods with spec.nodeName set to itself',
  );
  const admin = create(
    'pods',
    ns,
    pod(
      { nodeName: 'node2', volumes: [{ name: 'c', configMap: { name: 'settings' } }] },
      { name: 'z', ...mirror },
    ),
  );
  t.is(admin.metadata.name, 'z', 'the rule is about nodes; an admin may');
});

test('disableAdmissionPlugins: [ServiceAccount] leaves pods as they are sent', async (t) => {
  const plain = await startCluster({ disableAdmissionPlugins: ['ServiceAccount'] });
  try {
    const p = plain.cp.registry.create(plain.cp.registry.byStorage('pods'), 'default', pod()).object;
    t.is(p.spec.serviceAccountName, undefined);
    t.is(p.spec.volumes, undefined);
  } finally {
    await plain.destroy();
  }
});
