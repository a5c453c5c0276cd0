import test from 'ava';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RealClock } from '@nodelet/kernel';
import { ClientNodeApi, toApiError, toWire } from './client-node-api.js';
import { loadKubeConfig } from './kubeconfig.js';
import { ApiError, rfc3339Micro } from './kube-api.js';

test('an unreachable server is an ApiError with code 0 that names the server', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-kc-'));
  writeFileSync(
    join(dir, 'kc'),
    'apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n',
  );
  const api = new ClientNodeApi(loadKubeConfig(join(dir, 'kc')), { clock: new RealClock() });
  const err = await t.throwsAsync(api.getNode('n1'));
  t.true(err instanceof ApiError);
  t.is((err as ApiError).code, 0);
  t.regex(
    err!.message,
    /^get node n1: the API server at https:\/\/127\.0\.0\.1:1 is unreachable: .*ECONNREFUSED/,
  );
  api.close();
});

test('API errors keep the Status reason and message; models become plain JSON with RFC 3339 times', (t) => {
  const conflict = toApiError(
    {
      code: 409,
      body: JSON.stringify({ kind: 'Status', reason: 'Conflict', message: 'the object has been modified' }),
    },
    'https://x',
    'update lease kube-node-lease/n1',
  );
  t.is(conflict.code, 409);
  t.is(conflict.reason, 'Conflict');
  t.is(conflict.message, 'update lease kube-node-lease/n1: the object has been modified (HTTP 409)');
  t.is(toApiError({ code: 404, body: '' }, 'https://x', 'get').reason, 'NotFound');
  t.deepEqual(
    toWire({
      metadata: { creationTimestamp: new Date(Date.UTC(2026, 0, 1)), x: undefined },
      list: [new Date(1)],
    }),
    {
      metadata: { creationTimestamp: '2026-01-01T00:00:00Z' },
      list: ['1970-01-01T00:00:00.001Z'],
    },
  );
  t.is(rfc3339Micro(Date.UTC(2026, 0, 1, 0, 0, 0, 123)), '2026-01-01T00:00:00.123000Z');
});
