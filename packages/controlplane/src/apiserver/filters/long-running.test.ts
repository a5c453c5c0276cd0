import test from 'ava';
import { isLongRunning } from './long-running.js';

const url = (target: string) => new URL(`https://localhost${target}`);

test('watches, proxies, logs and the streaming subresources are long-running; everything else is not', (t) => {
  for (const target of [
    '/api/v1/namespaces/default/pods?watch=true',
    '/api/v1/pods?watch=1',
    '/api/v1/watch/namespaces/default/pods',
    '/apis/apps/v1/watch/deployments',
    '/api/v1/namespaces/default/pods/p/log',
    '/api/v1/namespaces/default/pods/p/exec',
    '/api/v1/namespaces/default/pods/p/attach',
    '/api/v1/namespaces/default/pods/p/portforward',
    '/api/v1/namespaces/default/services/s/proxy/path',
    '/api/v1/nodes/n1/proxy/stats/summary',
  ]) {
    t.true(isLongRunning(url(target)), target);
  }
  for (const target of [
    '/api/v1/namespaces/default/pods',
    '/api/v1/namespaces/default/pods?watch=false',
    '/api/v1/namespaces/log/pods',
    '/api/v1/namespaces/exec',
    '/api/v1/namespaces/default/finalize',
    '/api/v1/namespaces/default/pods/p/status',
    '/apis/apps/v1/namespaces/default/deployments/d/scale',
    '/healthz',
    '/openapi/v2',
  ]) {
    t.false(isLongRunning(url(target)), target);
  }
});
