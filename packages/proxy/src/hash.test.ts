import test from 'ava';
import { base32, hashName } from './hash.js';

test('base32 matches RFC 4648 test vectors', (t) => {
  const enc = (s: string) => base32(new TextEncoder().encode(s));
  t.is(enc(''), '');
  t.is(enc('f'), 'MY======');
  t.is(enc('fo'), 'MZXQ====');
  t.is(enc('foo'), 'MZXW6===');
  t.is(enc('foob'), 'MZXW6YQ=');
  t.is(enc('fooba'), 'MZXW6YTB');
  t.is(enc('foobar'), 'MZXW6YTBOI======');
});

test('chain hashes equal upstream kube-proxy names (values from its proxier tests)', (t) => {
  t.is(`KUBE-SVC-${hashName('ns1/svc1:p80tcp')}`, 'KUBE-SVC-XPGD46QRK7WJZT7O');
  t.is(`KUBE-SEP-${hashName('ns1/svc1:p80tcp10.180.0.1:80')}`, 'KUBE-SEP-SXIVWICOYRO3J4NJ');
});
