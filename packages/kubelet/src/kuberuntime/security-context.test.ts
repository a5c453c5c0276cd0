import test from 'ava';
import type { Pod } from '@nodelet/api';
import { SecurityProfile_ProfileType } from '@nodelet/cri';
import { type Harness, makePod, startHarness } from '../test-harness.js';
import {
  containerSecurityContext,
  DEFAULT_MASKED_PATHS,
  effectiveSecurityContext,
  sandboxSecurityContext,
  seccompProfile,
  verifyRunAsNonRoot,
} from './security-context.js';

const options = { seccompProfileRoot: '/var/lib/kubelet/seccomp', seccompDefault: false };

const pod = (spec: Partial<NonNullable<Pod['spec']>>): Pod => makePod('p', spec);

test('the pod securityContext fills in what the container leaves unset; the container wins', (t) => {
  const p = pod({
    securityContext: { runAsUser: 1000, runAsGroup: 3000, runAsNonRoot: true, fsGroup: 2000 },
    containers: [{ name: 'main', securityContext: { runAsUser: 2000, readOnlyRootFilesystem: true } }],
  });
  t.deepEqual(effectiveSecurityContext(p, p.spec!.containers[0]!), {
    runAsUser: 2000,
    runAsGroup: 3000,
    runAsNonRoot: true,
    readOnlyRootFilesystem: true,
  });
});

test('the CRI container security context: user, groups, capabilities, no_new_privs, masked paths', (t) => {
  const p = pod({
    securityContext: { runAsUser: 1000, fsGroup: 2000, supplementalGroups: [4000, 5000] },
    containers: [
      {
        name: 'main',
        securityContext: {
          readOnlyRootFilesystem: true,
          allowPrivilegeEscalation: false,
          capabilities: { add: ['NET_BIND_SERVICE'], drop: ['ALL'] },
        },
      },
    ],
  });
  const sc = containerSecurityContext(p, p.spec!.containers[0]!, options);
  t.like(sc, {
    privileged: false,
    readonlyRootfs: true,
    noNewPrivs: true,
    runAsUser: { value: 1000n },
    supplementalGroups: [2000n, 4000n, 5000n],
    capabilities: { addCapabilities: ['NET_BIND_SERVICE'], dropCapabilities: ['ALL'] },
  });
  t.is(sc.runAsGroup, undefined, 'no runAsGroup: the image decides');
  t.deepEqual(sc.maskedPaths, [...DEFAULT_MASKED_PATHS]);
  t.is(sc.readonlyPaths!.length, 5);
  const unmasked = pod({ containers: [{ name: 'main', securityContext: { procMount: 'Unmasked' } }] });
  const u = containerSecurityContext(unmasked, unmasked.spec!.containers[0]!, options);
  t.deepEqual([u.maskedPaths, u.readonlyPaths], [[], []], 'procMount: Unmasked');
  t.false(
    containerSecurityContext(pod({}), pod({}).spec!.containers[0]!, options).noNewPrivs,
    'allowPrivilegeEscalation unset leaves no_new_privs off',
  );
});

test('seccomp: the container’s profile, else the pod’s, else seccompDefault; Localhost under the root', (t) => {
  const c = { name: 'main' };
  const U = SecurityProfile_ProfileType.Unconfined;
  const R = SecurityProfile_ProfileType.RuntimeDefault;
  const L = SecurityProfile_ProfileType.Localhost;
  t.is(seccompProfile(pod({}), c, options).profileType, U);
  t.is(seccompProfile(pod({}), c, { ...options, seccompDefault: true }).profileType, R);
  const podLevel = pod({ securityContext: { seccompProfile: { type: 'RuntimeDefault' } } });
  t.is(seccompProfile(podLevel, c, options).profileType, R);
  const local = {
    ...c,
    securityContext: { seccompProfile: { type: 'Localhost', localhostProfile: 'p/audit.json' } },
  };
  t.deepEqual(seccompProfile(podLevel, local, options), {
    profileType: L,
    localhostRef: '/var/lib/kubelet/seccomp/p/audit.json',
  });
});

test('runAsNonRoot against the image user: upstream’s three refusals, and what passes', (t) => {
  const nonRoot = pod({ securityContext: { runAsNonRoot: true } });
  const c = nonRoot.spec!.containers[0]!;
  t.is(
    verifyRunAsNonRoot(nonRoot, c, { uid: 0 }),
    'container has runAsNonRoot and image will run as root (pod: "p_default(uid-p)", container: main)',
  );
  t.is(
    verifyRunAsNonRoot(nonRoot, c, { username: 'nginx' }),
    'container has runAsNonRoot and image has non-numeric user (nginx), cannot verify user is non-root (pod: "p_default(uid-p)", container: main)',
  );
  t.is(verifyRunAsNonRoot(nonRoot, c, { uid: 101 }), undefined);
  const root = pod({ securityContext: { runAsNonRoot: true, runAsUser: 0 } });
  t.is(
    verifyRunAsNonRoot(root, root.spec!.containers[0]!, { uid: 1000 }),
    'container\'s runAsUser breaks non-root policy (pod: "p_default(uid-p)", container: main)',
  );
  t.is(verifyRunAsNonRoot(pod({}), c, { uid: 0 }), undefined, 'no runAsNonRoot: root is fine');
});

test('the sandbox is privileged when any container is, and carries the pod’s sysctls', (t) => {
  const p = pod({
    securityContext: { sysctls: [{ name: 'net.ipv4.tcp_syncookies', value: '1' }] },
    initContainers: [{ name: 'setup', securityContext: { privileged: true } }],
  });
  const sb = sandboxSecurityContext(p);
  t.true(sb.securityContext.privileged);
  t.deepEqual(sb.sysctls, { 'net.ipv4.tcp_syncookies': '1' });
  t.false(sandboxSecurityContext(pod({})).securityContext.privileged);
});

/** The CreateContainer and RunPodSandbox requests the kubelet makes. */
function recordRequests(h: Harness) {
  const containers: Parameters<Harness['runtime']['createContainer']>[0][] = [];
  const sandboxes: Parameters<Harness['runtime']['runPodSandbox']>[0][] = [];
  const create = h.runtime.createContainer.bind(h.runtime);
  const run = h.runtime.runPodSandbox.bind(h.runtime);
  h.runtime.createContainer = async (req) => (containers.push(req), create(req));
  h.runtime.runPodSandbox = async (req) => (sandboxes.push(req), run(req));
  return { containers, sandboxes };
}

test('through the kubelet: the security context reaches CRI; runAsNonRoot with a root image is CreateContainerConfigError', async (t) => {
  const h = await startHarness();
  t.teardown(() => h.kubelet.stop());
  const seen = recordRequests(h);
  h.source.set([
    makePod('locked', {
      securityContext: { runAsUser: 1000, runAsNonRoot: true, fsGroup: 2000 },
      containers: [
        {
          name: 'main',
          image: 'busybox:1.36',
          securityContext: {
            readOnlyRootFilesystem: true,
            capabilities: { drop: ['ALL'] },
            privileged: false,
          },
        },
      ],
    }),
    makePod('rooted', { securityContext: { runAsNonRoot: true } }),
  ]);
  await h.clock.advance(2_000);
  t.is(h.status('uid-locked').phase, 'Running');
  const locked = seen.containers.find(
    (r) => r.config?.metadata?.name === 'main' && r.config.labels['io.kubernetes.pod.name'] === 'locked',
  );
  t.like(locked?.config?.linux?.securityContext, {
    runAsUser: { value: 1000n },
    readonlyRootfs: true,
    capabilities: { dropCapabilities: ['ALL'] },
    supplementalGroups: [2000n],
  });
  const waiting = h.status('uid-rooted').containerStatuses?.[0]?.state?.waiting;
  t.is(waiting?.reason, 'CreateContainerConfigError');
  t.is(
    waiting?.message,
    'container has runAsNonRoot and image will run as root (pod: "rooted_default(uid-rooted)", container: main)',
  );
});
