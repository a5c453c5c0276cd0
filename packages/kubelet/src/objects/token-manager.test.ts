import test from 'ava';
import type { Pod } from '@nodelet/api';
import { ApiError } from '@nodelet/client';
import { FakeKubeApi } from '@nodelet/client/testing';
import { createLogger, MemorySink, VirtualClock } from '@nodelet/kernel';
import { ApiPodObjects } from './api-objects.js';

// Service-account tokens on the in-memory API server and virtual time: when a cached token is renewed
// (80 % of its lifetime, or 24 h), what happens when renewing fails, and what the request says.

const TOKEN = 'serviceaccount/default/default/token';

function setup() {
  const clock = new VirtualClock();
  const api = new FakeKubeApi();
  api.now = () => clock.now();
  api.put('/api/v1/namespaces/default/serviceaccounts', { metadata: { name: 'default' } });
  const logs = new MemorySink();
  const logger = createLogger({ sink: logs.sink, level: 'debug', now: () => clock.now() });
  // No jitter: the renewal times are exact.
  const objects = new ApiPodObjects({ api: () => api, clock, logger, random: () => 0 });
  return { clock, api, objects, logs };
}

const pod: Pod = {
  metadata: { name: 'web', namespace: 'default', uid: 'uid-web' },
  spec: { containers: [] },
};

test('the TokenRequest: the pod service account, audiences, lifetime, bound to the pod', async (t) => {
  const { api, objects } = setup();
  const status = await objects.getServiceAccountToken(pod, { audiences: ['vault'], expirationSeconds: 3607 });
  const [call] = api.callsOf('create', TOKEN);
  t.deepEqual(call!.body, {
    spec: {
      audiences: ['vault'],
      expirationSeconds: 3607,
      boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'web', uid: 'uid-web' },
    },
  });
  t.regex(status.token, /^fake\./);
  t.is(status.expirationTimestamp, '2026-01-01T01:00:07Z');
});

test('rotation: a 1 h token is renewed once older than 80 % of its lifetime (48 min), not before', async (t) => {
  const { clock, api, objects } = setup();
  const get = () => objects.getServiceAccountToken(pod, { audiences: [], expirationSeconds: 3600 });
  const first = await get();
  await clock.advance(2_880_000); // exactly 80 %
  t.is((await get()).token, first.token, 'at 48 min: still the cached token');
  t.is(api.callsOf('create', TOKEN).length, 1);
  await clock.advance(1_000);
  const second = await get();
  t.not(second.token, first.token, 'past 48 min: a new token');
  t.is(second.expirationTimestamp, '2026-01-01T01:48:01Z');
  t.is(api.callsOf('create', TOKEN).length, 2);
});

test('rotation: a 48 h token is renewed after 24 h, long before 80 % of its lifetime', async (t) => {
  const { clock, api, objects } = setup();
  const get = () => objects.getServiceAccountToken(pod, { audiences: [], expirationSeconds: 48 * 3600 });
  await get();
  await clock.advance(24 * 3600_000);
  await get();
  t.is(api.callsOf('create', TOKEN).length, 1, 'at 24 h exactly: cached');
  await clock.advance(1_000);
  await get();
  t.is(api.callsOf('create', TOKEN).length, 2, 'past 24 h: renewed');
});

test('renewal fails: the cached token while it is valid; once expired, the error', async (t) => {
  const { clock, api, objects, logs } = setup();
  const get = () => objects.getServiceAccountToken(pod, { audiences: [], expirationSeconds: 3600 });
  const first = await get();
  await clock.advance(3_000_000); // due for renewal
  api.down = true;
  t.is((await get()).token, first.token, 'the API is away: the still-valid token');
  t.true(logs.lines().some((l) => l.includes("Couldn't update token")));
  await clock.advance(601_000); // now past its expiry
  const err = await t.throwsAsync(get());
  t.regex(
    err!.message,
    /^token \[.*\] expired and refresh failed: create serviceaccount\/default\/default\/token: the API server is unreachable$/,
  );
  api.down = false;
  t.not((await get()).token, first.token);
});

test('no token yet and the request fails: upstream "failed to fetch token" with the API error', async (t) => {
  const { api, objects } = setup();
  api.failNext.set('create serviceaccount', new ApiError(403, 'Forbidden', 'create token: forbidden'));
  await t.throwsAsync(objects.getServiceAccountToken(pod, { audiences: [] }), {
    message: 'failed to fetch token: create token: forbidden',
  });
  const other: Pod = { ...pod, spec: { containers: [], serviceAccountName: 'missing' } };
  await t.throwsAsync(objects.getServiceAccountToken(other, { audiences: [] }), {
    message: 'failed to fetch token: serviceaccounts "missing" not found',
  });
});

test('cache: another audience or lifetime gets its own token; a deleted pod its tokens dropped', async (t) => {
  const { api, objects } = setup();
  await objects.getServiceAccountToken(pod, { audiences: ['a'], expirationSeconds: 3600 });
  await objects.getServiceAccountToken(pod, { audiences: ['a'], expirationSeconds: 3600 });
  await objects.getServiceAccountToken(pod, { audiences: ['b'], expirationSeconds: 3600 });
  await objects.getServiceAccountToken(pod, { audiences: ['a'], expirationSeconds: 7200 });
  t.is(api.callsOf('create', TOKEN).length, 3);
  t.is(objects.tokens.size, 3);
  objects.registerPod(pod);
  objects.unregisterPod(pod);
  t.is(objects.tokens.size, 0);
  objects.stop();
});
