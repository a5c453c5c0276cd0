import test from 'ava';
import { rm } from 'node:fs/promises';
import { request } from 'node:https';
import { readFile } from 'node:fs/promises';
import { apiRequest, readyNode, startCluster, waitFor, kubectlTests } from './test-helpers.js';
import { tokenPath } from './test-tokens.js';

const kubectlTest = kubectlTests(test);

// A restarted control plane keeps its objects with their resourceVersions, its certificates, and the
// history watches resume from.

kubectlTest(
  'objects, resourceVersions and certificates survive a restart; a watch resumes from its resourceVersion',
  async (t) => {
    const first = await startCluster();
    const dataDir = first.dataDir;
    try {
      t.is((await first.api('POST', '/api/v1/nodes', readyNode('node-1'))).status, 201);
      const pod = await first.kubectl(['run', 'web', '--image=nginx:1.27', '--labels=app=web']);
      t.is(pod.code, 0, pod.stderr);
      const svc = await first.kubectl(['expose', 'pod', 'web', '--port=80', '--target-port=8080']);
      t.is(svc.code, 0, svc.stderr);
      await waitFor(
        async () =>
          (await first.api('GET', '/api/v1/namespaces/default/pods/web')).json.spec.nodeName
            ? true
            : undefined,
        'the pod bound',
      );
      const before = (await first.api('GET', '/api/v1/namespaces/default/pods/web')).json;
      const beforeSvc = (await first.api('GET', '/api/v1/namespaces/default/services/web')).json;
      const listBefore = (await first.api('GET', '/api/v1/pods')).json;
      const ca = await readFile(`${dataDir}/pki/ca.crt`, 'utf8');
      await first.stop();

      const second = await startCluster({ dataDir });
      try {
        const after = (await second.api('GET', '/api/v1/namespaces/default/pods/web')).json;
        t.deepEqual(after, before);
        const afterSvc = (await second.api('GET', '/api/v1/namespaces/default/services/web')).json;
        t.is(afterSvc.spec.clusterIP, beforeSvc.spec.clusterIP);
        t.is(afterSvc.metadata.resourceVersion, beforeSvc.metadata.resourceVersion);
        t.is(await readFile(`${dataDir}/pki/ca.crt`, 'utf8'), ca);
        t.true(Number(second.cp.store.revision) >= Number(listBefore.metadata.resourceVersion));

        // A watch from the resourceVersion of the list made before the restart sees what changed since.
        const events: { type: string; name: string; rv: string }[] = [];
        const stream = request(
          new URL(
            `/api/v1/namespaces/default/pods?watch=true&resourceVersion=${listBefore.metadata.resourceVersion}`,
            second.cp.url,
          ),
          {
            ca: second.cp.caCert,
            cert: second.cp.adminCredentials.cert,
            key: second.cp.adminCredentials.key,
          },
          (res) => {
            let buf = '';
            res.on('data', (d: Buffer) => {
              buf += d.toString();
              for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
                const e = JSON.parse(buf.slice(0, i));
                buf = buf.slice(i + 1);
                events.push({
                  type: e.type,
                  name: e.object.metadata.name,
                  rv: e.object.metadata.resourceVersion,
                });
              }
            });
          },
        );
        stream.end();
        t.is(
          (
            await second.api(
              'PATCH',
              '/api/v1/namespaces/default/pods/web',
              { metadata: { labels: { restarted: 'yes' } } },
              { 'content-type': 'application/merge-patch+json' },
            )
          ).status,
          200,
        );
        await waitFor(
          () => (events.some((e) => e.type === 'MODIFIED') ? true : undefined),
          'the MODIFIED event',
        );
        stream.destroy();
        t.deepEqual(
          events.map((e) => e.type),
          ['MODIFIED'],
        );
        t.true(Number(events[0]!.rv) > Number(before.metadata.resourceVersion));

        const kubectl = await second.kubectl(['get', 'pod', 'web', '--no-headers']);
        t.regex(kubectl.stdout, /^web\s+0\/1\s+Pending/);
      } finally {
        await second.stop();
      }
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  },
);

test('a service-account token issued before a restart still authenticates after it (the signing key is kept)', async (t) => {
  const first = await startCluster();
  const dataDir = first.dataDir;
  try {
    const issued = await first.api('POST', tokenPath('default', 'default'), {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: {},
    });
    t.is(issued.status, 201, issued.text);
    await first.stop();
    const second = await startCluster({ dataDir });
    try {
      const r = await apiRequest(
        second.cp,
        { headers: { authorization: `Bearer ${issued.json.status.token}` } },
        'POST',
        '/apis/authentication.k8s.io/v1/selfsubjectreviews',
        { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
      );
      t.is(r.status, 201, r.text);
      t.is(r.json.status.userInfo.username, 'system:serviceaccount:default:default');
    } finally {
      await second.stop();
    }
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
});
