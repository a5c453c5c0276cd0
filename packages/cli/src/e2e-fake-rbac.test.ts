import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { kubectlPath, NodeletUp, requireKubectl, run } from './e2e-containerd/nodelet-up.js';

/**
 * Who may do what on `nodelet up`, tried with the real kubectl as its users would: a user given the
 * `view` ClusterRole (`--user alice=view`) and the kubelets' own node credentials. Two simulated nodes;
 * each runs a pod that mounts a Secret of its own.
 */
const kubectl = requireKubectl(test);

const manifests = `apiVersion: v1
kind: Secret
metadata: {name: for-a}
stringData: {password: secret-of-a}
---
apiVersion: v1
kind: Secret
metadata: {name: for-b}
stringData: {password: secret-of-b}
---
apiVersion: v1
kind: Pod
metadata: {name: on-a}
spec:
  nodeName: rb-1
  terminationGracePeriodSeconds: 1
  containers: [{name: main, image: nodelet.test/busybox:1, volumeMounts: [{name: s, mountPath: /s}]}]
  volumes: [{name: s, secret: {secretName: for-a}}]
---
apiVersion: v1
kind: Pod
metadata: {name: on-b}
spec:
  nodeName: rb-2
  terminationGracePeriodSeconds: 1
  containers: [{name: main, image: nodelet.test/busybox:1, volumeMounts: [{name: s, mountPath: /s}]}]
  volumes: [{name: s, secret: {secretName: for-b}}]
`;

/**
 * What `kubectl auth can-i --list` shows for `user`, bound cluster-wide to `clusterRole`, on a cluster with
 * upstream's bootstrap policy — computed from the golden data derived from upstream's policy files: the
 * role's rules (aggregated roles expanded), plus those of the roles bound to system:authenticated. Each
 * rule is broken down to one entry per resource (with its group and names) or URL, verbs merged, as
 * kubectl's BreakdownRule and CompactRules do before printing.
 */
interface GoldenRole {
  labels?: string[];
  aggregationRule?: string[];
  rules: string[];
}
const golden = JSON.parse(
  readFileSync(
    new URL('../../controlplane/src/authorization/testdata/bootstrap-policy-golden.json', import.meta.url),
    'utf8',
  ),
) as {
  clusterRoles: Record<string, GoldenRole>;
  clusterRoleBindings: Record<string, { roleRef: string; subjects: string[] }>;
};

function roleRules(name: string, seen = new Set<string>()): string[] {
  const role = golden.clusterRoles[name];
  if (!role || seen.has(name)) return [];
  seen.add(name);
  if (!role.aggregationRule) return role.rules;
  return Object.entries(golden.clusterRoles)
    .filter(([, r]) => (r.labels ?? []).some((l) => role.aggregationRule!.includes(l)))
    .flatMap(([other]) => roleRules(other, seen));
}

function expectedAccess(user: string, clusterRole: string): Record<string, string[]> {
  const roles = [clusterRole];
  for (const b of Object.values(golden.clusterRoleBindings)) {
    if (b.subjects.includes('Group system:authenticated') || b.subjects.includes(`User ${user}`))
      roles.push(b.roleRef.replace(/^ClusterRole /, ''));
  }
  const access = new Map<string, Set<string>>();
  const add = (key: string, verbs: string[]) => {
    const set = access.get(key) ?? new Set<string>();
    for (const v of verbs) set.add(v);
    access.set(key, set);
  };
  for (const rule of roles.flatMap((r) => roleRules(r))) {
    const f = Object.fromEntries(
      rule.split(' ').map((part) => [part.slice(0, part.indexOf('=')), part.slice(part.indexOf('=') + 1)]),
    ) as Record<string, string | undefined>;
    const list = (v: string | undefined) => (v === undefined ? [] : v.split(','));
    const verbs = list(f.v);
    for (const url of list(f.u)) add(`url ${url}`, verbs);
    const names = list(f.n).sort().join(' ');
    for (const group of f.g === undefined ? [] : list(f.g))
      for (const resource of list(f.r)) add(`${combineResourceGroup(resource, group)} [${names}]`, verbs);
  }
  return Object.fromEntries([...access].map(([k, v]) => [k, [...v].sort()]).sort());
}

/** How kubectl names a resource of a group: `deployments.apps/scale` (its describe.CombineResourceGroup). */
function combineResourceGroup(resource: string, group: string): string {
  const [base, sub] = resource.split(/\/(.*)/s) as [string, string | undefined];
  return `${base}${group ? `.${group}` : ''}${sub ? `/${sub}` : ''}`;
}

/** kubectl's table (Resources, Non-Resource URLs, Resource Names, Verbs), in the same shape. */
function accessTable(stdout: string): Record<string, string[]> {
  const access = new Map<string, Set<string>>();
  for (const line of stdout.trim().split('\n').slice(1)) {
    const m = /^(\S*)\s+\[([^\]]*)\]\s+\[([^\]]*)\]\s+\[([^\]]*)\]\s*$/.exec(line);
    if (!m) throw new Error(`an unexpected line of kubectl auth can-i --list: ${JSON.stringify(line)}`);
    const [, resource, urls, names, verbs] = m as unknown as string[];
    const keys = resource
      ? [`${resource} [${names!.split(' ').filter(Boolean).sort().join(' ')}]`]
      : urls!.split(' ').map((u) => `url ${u}`);
    for (const key of keys) {
      const set = access.get(key) ?? new Set<string>();
      for (const v of verbs!.split(' ').filter(Boolean)) set.add(v);
      access.set(key, set);
    }
  }
  return Object.fromEntries([...access].map(([k, v]) => [k, [...v].sort()]).sort());
}

if (kubectl) {
  let up: NodeletUp;
  const as = (kubeconfig: string, args: string[]) =>
    run(undefined, kubectlPath, [
      '--kubeconfig',
      kubeconfig,
      '--cache-dir',
      join(up.dataDir, `kubectl-cache-${kubeconfig.split('/').at(-2)}`),
      ...args,
    ]);
  const alice = () => join(up.dataDir, 'users', 'alice.kubeconfig');
  const nodeA = () => join(up.dataDir, 'nodes', 'rb-1', 'kubeconfig');

  test.before(async () => {
    up = await NodeletUp.start(['--nodes', '2', '--hostname-override', 'rb', '--user', 'alice=view']);
    await up.waitNodeReady('rb-1');
    await up.waitNodeReady('rb-2');
    await up.kubectlOk(['apply', '-f', '-'], manifests);
    // Each kubelet reads its pod's Secret with its own credentials: the pods start.
    await up.kubectlOk(['wait', '--for=condition=Ready', 'pod/on-a', 'pod/on-b', '--timeout=60s']);
  });
  test.after.always(async () => {
    await up?.stop();
    up?.dispose();
  });

  test.serial(
    'nodelet up --user alice=view prints the kubeconfig it wrote; kubectl auth whoami says alice',
    async (t) => {
      t.true(up.stdout().includes(`kubeconfig for alice (ClusterRole view): ${alice()}\n`), up.stdout());
      const whoami = await as(alice(), ['auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username}']);
      t.is(whoami.stdout, 'alice', whoami.stderr);
    },
  );

  test.serial('a view user reads pods and is refused creating one, with upstream message', async (t) => {
    const pods = await as(alice(), ['get', 'pods', '-o', 'name']);
    t.is(pods.code, 0, pods.stderr);
    t.deepEqual(pods.stdout.trim().split('\n').sort(), ['pod/on-a', 'pod/on-b']);
    const created = await as(alice(), ['run', 'mine', '--image=nginx:1.27']);
    t.is(created.code, 1);
    t.is(
      created.stderr.trim(),
      'Error from server (Forbidden): pods is forbidden: User "alice" cannot create resource "pods" in API group "" in the namespace "default"',
    );
    // view does not include Secrets.
    const secret = await as(alice(), ['get', 'secret', 'for-a']);
    t.regex(
      secret.stderr,
      /secrets "for-a" is forbidden: User "alice" cannot get resource "secrets" in API group "" in the namespace "default"/,
    );
  });

  test.serial(
    'kubectl auth can-i --list as the view user: what a kubeadm cluster gives a view user (upstream policy)',
    async (t) => {
      const listed = await as(alice(), ['auth', 'can-i', '--list']);
      t.is(listed.code, 0, listed.stderr);
      t.is(listed.stderr, '', 'complete: no "the list may be incomplete" warning');
      t.deepEqual(accessTable(listed.stdout), expectedAccess('alice', 'view'), listed.stdout);
    },
  );

  test.serial('a node reads the Secret its own pod uses, not the one of a pod on another node', async (t) => {
    const own = await as(nodeA(), ['get', 'secret', 'for-a', '-o', 'jsonpath={.data.password}']);
    t.is(own.code, 0, own.stderr);
    t.is(Buffer.from(own.stdout, 'base64').toString(), 'secret-of-a');
    const other = await as(nodeA(), ['get', 'secret', 'for-b']);
    t.is(other.code, 1);
    t.regex(
      other.stderr,
      /^Error from server \(Forbidden\): secrets "for-b" is forbidden: User "system:node:rb-1" cannot get resource "secrets" in API group "" in the namespace "default": no relationship found between node 'rb-1' and this object/,
    );
    const list = await as(nodeA(), ['get', 'secrets']);
    t.regex(list.stderr, /User "system:node:rb-1" cannot list resource "secrets"/);
  });

  test.serial(
    'kubectl debug (pods/ephemeralcontainers) is refused to a view user and to the pod’s own node',
    async (t) => {
      const viewer = await as(alice(), ['debug', 'on-a', '--image=busybox', '--container=dbg']);
      t.is(viewer.code, 1);
      t.regex(
        viewer.stderr,
        /pods "on-a" is forbidden: User "alice" cannot patch resource "pods\/ephemeralcontainers" in API group "" in the namespace "default"/,
      );
      const node = await as(nodeA(), ['debug', 'on-a', '--image=busybox', '--container=dbg']);
      t.is(node.code, 1);
      t.regex(
        node.stderr,
        /pods "on-a" is forbidden: User "system:node:rb-1" cannot patch resource "pods\/ephemeralcontainers"/,
      );
      const pod = JSON.parse(await up.kubectlOk(['get', 'pod', 'on-a', '-o', 'json']));
      t.is(pod.spec.ephemeralContainers, undefined, 'no ephemeral container was added');
    },
  );

  test.serial('a node may not change another node, nor its own node-restriction labels', async (t) => {
    const other = await as(nodeA(), ['label', 'node', 'rb-2', 'team=a']);
    t.is(other.code, 1);
    t.regex(other.stderr, /Forbidden/);
    t.regex(other.stderr, /rb-2/);
    const own = await as(nodeA(), ['label', 'node', 'rb-1', 'node-restriction.kubernetes.io/pool=x']);
    t.is(own.code, 1);
    t.regex(own.stderr, /node-restriction\.kubernetes\.io\/pool/);
    const labels = await up.kubectlOk(['get', 'node', 'rb-2', '-o', 'jsonpath={.metadata.labels}']);
    t.false(labels.includes('team'));
  });
}
