import test from 'ava';
import { isErrorCode } from '@nodelet/kernel';
import { IpAllocator } from './ip-allocator.js';

test('skips network, gateway and broadcast; masks an unaligned CIDR', (t) => {
  const pool = new IpAllocator('192.168.7.9/30');
  t.is(pool.cidr, '192.168.7.8/30');
  t.is(pool.capacity, 1);
  t.is(pool.allocate(), '192.168.7.10');
  t.true(
    isErrorCode(
      t.throws(() => pool.allocate()),
      'Internal',
    ),
  );
  pool.release('192.168.7.10');
  t.is(pool.allocate(), '192.168.7.10');
});

test('a /16 holds 65,533 pods', (t) => {
  const pool = new IpAllocator('10.244.0.0/16');
  t.is(pool.capacity, 65_533);
  t.is(pool.allocate(), '10.244.0.2');
  t.is(pool.allocate(), '10.244.0.3');
});

test('refuses what is not an IPv4 CIDR', (t) => {
  for (const cidr of ['10.0.0.0', '10.0.0.256/24', 'fd00::/64', '10.0.0.0/33', '10.0.0.0/31']) {
    t.true(
      isErrorCode(
        t.throws(() => new IpAllocator(cidr)),
        'InvalidInput',
      ),
      cidr,
    );
  }
});
