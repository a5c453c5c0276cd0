import test from 'ava';
import type { Pod } from '@nodelet/api';
import { admitPod, type AdmissionNode } from './admission.js';
import { apiPod, startCluster } from './apiserver/test-harness.js';
import { makePod } from './test-harness.js';

/**
 * The node-level predicates of kubelet admission beside resources (upstream GeneralPredicates):
 * host ports free (NodePorts) and, for pods from the API, the Node's NoExecute taints tolerated
 * (TaintToleration); the scheduler minds NoSchedule, a static pod is the node's own.
 */
const node: AdmissionNode = { name: 'n', labels: {}, allocatable: { cpu: '4', memory: '8Gi', pods: '110' } };

const withPort = (name: string, hostPort: number, hostIP?: string, protocol?: string): Pod =>
  makePod(name, {
    containers: [
      {
        name: 'main',
        image: 'busybox:1.36',
        ports: [
          { containerPort: 80, hostPort, ...(hostIP ? { hostIP } : {}), ...(protocol ? { protocol } : {}) },
        ],
      },
    ],
  });

test('a host port already taken is NodePorts; another port, protocol or address is fine', (t) => {
  const running = [withPort('a', 8080, '10.0.0.1')];
  const refused = {
    admit: false,
    reason: 'NodePorts',
    message: "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports",
  };
  t.deepEqual(admitPod(withPort('b', 8080), running, node), refused, 'all addresses overlaps 10.0.0.1');
  t.deepEqual(admitPod(withPort('c', 8080, '10.0.0.1'), running, node), refused);
  t.true(admitPod(withPort('d', 8080, '10.0.0.2'), running, node).admit, 'another address');
  t.true(admitPod(withPort('e', 8080, '10.0.0.1', 'UDP'), running, node).admit, 'another protocol');
  t.true(admitPod(withPort('f', 8081), running, node).admit, 'another port');
});

test('NoExecute taints: an API pod must tolerate them; NoSchedule is the scheduler’s business', (t) => {
  const tainted: AdmissionNode = {
    ...node,
    taints: [
      { key: 'maintenance', value: 'yes', effect: 'NoExecute' },
      { key: 'dedicated', value: 'db', effect: 'NoSchedule' },
    ],
  };
  t.like(admitPod(makePod('plain', {}), [], tainted), {
    admit: false,
    reason: 'TaintToleration',
    message: "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate",
  });
  const tolerating = makePod('tolerant', {
    tolerations: [{ key: 'maintenance', operator: 'Equal', value: 'yes', effect: 'NoExecute' }],
  });
  t.true(admitPod(tolerating, [], tainted).admit);
  const everything = makePod('all', { tolerations: [{ operator: 'Exists' }] });
  t.true(admitPod(everything, [], tainted).admit);
  const wrongValue = makePod('wrong', { tolerations: [{ key: 'maintenance', value: 'no' }] });
  t.false(admitPod(wrongValue, [], tainted).admit);
});

test('through a joined kubelet: a NoExecute-tainted node rejects an API pod that does not tolerate it', async (t) => {
  const h = await startCluster({
    apiServer: { registerWithTaints: [{ key: 'maintenance', value: 'yes', effect: 'NoExecute' }] },
  });
  t.teardown(() => h.kubelet.stop());
  await h.clock.advance(1_000);
  await h.api.createPod(apiPod('intolerant'));
  await h.api.createPod(
    apiPod('tolerant', { tolerations: [{ key: 'maintenance', operator: 'Exists', effect: 'NoExecute' }] }),
  );
  await h.clock.advance(2_000);
  t.like(h.api.pods.get('default/intolerant')?.status, { phase: 'Failed', reason: 'TaintToleration' });
  t.is(h.api.pods.get('default/tolerant')?.status?.phase, 'Running');
});
