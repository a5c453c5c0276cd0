import test from 'ava';
import { VirtualClock } from '@nodelet/kernel';
import type { EndpointInfo } from '@nodelet/proxy';
import { RoundRobin } from './balancer.js';

const ep = (ip: string): EndpointInfo => ({
  ip,
  port: 80,
  endpoint: `${ip}:80`,
  ready: true,
  serving: true,
  terminating: false,
  isLocal: false,
});
const eps = [ep('10.0.0.1'), ep('10.0.0.2'), ep('10.0.0.3')];

test('round-robin in endpoint order', (t) => {
  const rr = new RoundRobin(new VirtualClock());
  rr.update(eps, 0);
  t.deepEqual(
    [1, 2, 3, 4].map(() => rr.pick('c')!.ip),
    ['10.0.0.1', '10.0.0.2', '10.0.0.3', '10.0.0.1'],
  );
});

test('ClientIP affinity holds for the timeout, then the client is balanced again', async (t) => {
  const clock = new VirtualClock();
  const rr = new RoundRobin(clock);
  rr.update(eps, 600);
  const first = rr.pick('192.0.2.1')!.ip;
  t.is(rr.pick('192.0.2.2')!.ip, '10.0.0.2', 'another client gets the next endpoint');
  await clock.advance(599_000);
  t.is(rr.pick('192.0.2.1')!.ip, first, 'each use refreshes the timeout');
  await clock.advance(599_000);
  t.is(rr.pick('192.0.2.1')!.ip, first);
  await clock.advance(600_000);
  t.not(rr.pick('192.0.2.1')!.ip, first, 'expired after 600 s without use');
});

test('affinity to a removed endpoint is dropped; refused endpoints are skipped', (t) => {
  const rr = new RoundRobin(new VirtualClock());
  rr.update(eps, 600);
  t.is(rr.pick('c')!.ip, '10.0.0.1');
  rr.update(eps.slice(1), 600);
  t.not(rr.pick('c')!.ip, '10.0.0.1');
  for (let i = 0; i < 4; i++) t.is(rr.pick(`d${i}`, new Set(['10.0.0.3:80']))!.ip, '10.0.0.2');
  rr.update([], 600);
  t.is(rr.pick('c'), undefined);
});
