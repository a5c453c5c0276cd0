import test from 'ava';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkResolvConfLimits, mergeDnsOptions } from './dns.js';
import { formatResolvConf, parseResolvConf } from './resolv-conf.js';

// Upstream dns_test.go TestParseResolvConf and TestMergeDNSOptions, as data.
const parseCases: [string, string[], string[], string[]][] = [
  ['', [], [], []],
  [' ', [], [], []],
  ['\n', [], [], []],
  ['\t\n\t', [], [], []],
  ['#comment\n', [], [], []],
  [' #comment\n', [], [], []],
  ['#comment\n#comment', [], [], []],
  ['#comment\nnameserver 1.2.3.4\nsearch', ['1.2.3.4'], [], []],
  ['nameserver 1.2.3.4', ['1.2.3.4'], [], []],
  [' nameserver 1.2.3.4', ['1.2.3.4'], [], []],
  ['\tnameserver 1.2.3.4', ['1.2.3.4'], [], []],
  ['nameserver\t1.2.3.4', ['1.2.3.4'], [], []],
  ['nameserver \t 1.2.3.4', ['1.2.3.4'], [], []],
  ['nameserver 1.2.3.4\nnameserver 5.6.7.8', ['1.2.3.4', '5.6.7.8'], [], []],
  ['nameserver 1.2.3.4 #comment', ['1.2.3.4'], [], []],
  ['search ', [], [], []],
  ['search foo', [], ['foo'], []],
  ['search foo bar', [], ['foo', 'bar'], []],
  ['search foo. bar', [], ['foo', 'bar'], []],
  ['search foo bar bat\n', [], ['foo', 'bar', 'bat'], []],
  ['search foo\nsearch bar', [], ['bar'], []],
  ['nameserver 1.2.3.4\nsearch foo bar', ['1.2.3.4'], ['foo', 'bar'], []],
  ['nameserver 1.2.3.4\nsearch foo\nnameserver 5.6.7.8\nsearch bar', ['1.2.3.4', '5.6.7.8'], ['bar'], []],
  ['#comment\nnameserver 1.2.3.4\n#comment\nsearch foo\ncomment', ['1.2.3.4'], ['foo'], []],
  ['options ', [], [], []],
  ['options ndots:5 attempts:2', [], [], ['ndots:5', 'attempts:2']],
  ['options ndots:1\noptions ndots:5 attempts:3', [], [], ['ndots:5', 'attempts:3']],
  [
    'nameserver 1.2.3.4\nsearch foo\nnameserver 5.6.7.8\nsearch bar\noptions ndots:5 attempts:4',
    ['1.2.3.4', '5.6.7.8'],
    ['bar'],
    ['ndots:5', 'attempts:4'],
  ],
];

for (const [text, servers, searches, options] of parseCases) {
  test(`parseResolvConf ${JSON.stringify(text)}`, (t) => {
    t.deepEqual(parseResolvConf(text), { servers, searches, options });
  });
}

test('parseResolvConf: a nameserver line without an address is an error', (t) => {
  t.throws(() => parseResolvConf('#comment\nnameserver'), { message: 'nameserver list is empty ' });
  t.throws(() => parseResolvConf('#comment\nnameserver\nsearch'));
});

test('mergeDnsOptions: the pod overwrites options by name and adds new ones after the node’s', (t) => {
  t.deepEqual(mergeDnsOptions(['ndots:5', 'debug'], []), ['ndots:5', 'debug']);
  t.deepEqual(
    mergeDnsOptions(['ndots:5', 'debug'], [{ name: 'single-request' }, { name: 'attempts', value: '3' }]),
    ['ndots:5', 'debug', 'single-request', 'attempts:3'],
  );
  t.deepEqual(
    mergeDnsOptions(
      ['ndots:5', 'debug'],
      [
        { name: 'ndots', value: '3' },
        { name: 'debug' },
        { name: 'single-request' },
        { name: 'attempts', value: '3' },
      ],
    ),
    ['ndots:3', 'debug', 'single-request', 'attempts:3'],
  );
});

test('formatResolvConf writes as containerd does; an empty config is empty', (t) => {
  t.is(
    formatResolvConf({ servers: ['10.0.0.10', '10.0.0.11'], searches: ['a', 'b'], options: ['ndots:5'] }),
    'search a b\nnameserver 10.0.0.10\nnameserver 10.0.0.11\noptions ndots:5\n',
  );
  t.is(formatResolvConf({ servers: [], searches: [], options: [] }), '');
});

test('checkResolvConfLimits: the node file must leave room for the cluster search paths (CheckLimitsForResolvConf)', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-resolv-'));
  const path = join(dir, 'resolv.conf');
  const check = (text: string, clusterDomain = 'cluster.local') => {
    writeFileSync(path, text);
    return checkResolvConfLimits({ clusterDNS: [], clusterDomain, resolvConf: path, nodeIPs: [] });
  };
  const domains = (n: number) => Array.from({ length: n }, (_, i) => `d${i}.example`).join(' ');
  t.is(await check(`search ${domains(29)}\n`), undefined);
  t.is(
    await check(`search ${domains(30)}\n`),
    `Resolv.conf file '${path}' contains search line consisting of more than 29 domains!`,
  );
  t.is(await check(`search ${domains(30)}\n`, ''), undefined, 'no cluster domain: 32 allowed');
  t.is(
    await check(`search ${'a'.repeat(254)}\n`),
    `Resolv.conf file "${path}" contains a search path which length is more than allowed 253 chars!`,
  );
  const long = Array.from({ length: 10 }, (_, i) => String.fromCharCode(97 + i).repeat(250)).join(' ');
  t.is(
    await check(`search ${long}\n`),
    `Resolv.conf file '${path}' contains search line which length is more than allowed 2048 chars!`,
  );
  t.regex((await check('nameserver\n'))!, /^nameserver list is empty/);
});
