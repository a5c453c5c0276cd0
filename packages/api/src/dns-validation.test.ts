import test from 'ava';
import { formatFieldError } from './field-error.js';
import type { Pod } from './types.js';
import { validatePod } from './validation.js';

// Upstream pkg/apis/core/validation: validatePodDNSConfig, ValidateHostAliases, spec.hostname/subdomain.

const pod = (spec: object): Pod =>
  ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'p', namespace: 'default' },
    spec: { containers: [{ name: 'c', image: 'busybox' }], ...spec },
  }) as Pod;
const errors = (spec: object) => validatePod(pod(spec)).map(formatFieldError);

test('dnsPolicy None needs a dnsConfig with a nameserver', (t) => {
  t.deepEqual(errors({ dnsPolicy: 'None' }), [
    'spec.dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None',
  ]);
  t.deepEqual(errors({ dnsPolicy: 'None', dnsConfig: { searches: ['a.b'] } }), [
    'spec.dnsConfig.nameservers: Required value: must provide at least one DNS nameserver when `dnsPolicy` is None',
  ]);
  t.deepEqual(errors({ dnsPolicy: 'None', dnsConfig: { nameservers: ['1.1.1.1'] } }), []);
});

test('dnsConfig: nameservers are IPs, at most 3; searches are subdomains within the limits; options have names', (t) => {
  t.deepEqual(errors({ dnsConfig: { nameservers: ['1.1.1.1', 'dns.local'] } }), [
    'spec.dnsConfig.nameservers[1]: Invalid value: "dns.local": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)',
  ]);
  t.deepEqual(errors({ dnsConfig: { nameservers: ['1.1.1.1', '1.1.1.2', '1.1.1.3', '1.1.1.4'] } }), [
    'spec.dnsConfig.nameservers: Invalid value: ["1.1.1.1","1.1.1.2","1.1.1.3","1.1.1.4"]: must not have more than 3 nameservers',
  ]);
  const many = Array.from({ length: 33 }, (_, i) => `d${i}.example`);
  t.deepEqual(errors({ dnsConfig: { searches: many } }), [
    `spec.dnsConfig.searches: Invalid value: ${JSON.stringify(many)}: must not have more than 32 search paths`,
  ]);
  t.deepEqual(errors({ dnsConfig: { searches: ['example.com.', 'Bad_Domain'] } }).length, 1);
  t.regex(
    errors({ dnsConfig: { searches: ['Bad_Domain'] } })[0]!,
    /^spec\.dnsConfig\.searches\[0\]: Invalid value: "Bad_Domain": a lowercase RFC 1123 subdomain/,
  );
  t.deepEqual(errors({ dnsConfig: { options: [{ value: '3' }] } }), [
    'spec.dnsConfig.options[0]: Required value: Option.Name must not be empty',
  ]);
});

test('hostAliases need an IP and subdomain hostnames; hostname and subdomain are DNS labels', (t) => {
  t.deepEqual(errors({ hostAliases: [{ ip: '10.0.0.1', hostnames: ['foo.local'] }] }), []);
  t.deepEqual(errors({ hostAliases: [{ ip: 'nope', hostnames: ['foo.local'] }] }), [
    'spec.hostAliases[0].ip: Invalid value: "nope": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)',
  ]);
  t.regex(
    errors({ hostAliases: [{ ip: '10.0.0.1', hostnames: ['Foo'] }] })[0]!,
    /^spec\.hostAliases\[0\]\.hostnames\[0\]: Invalid value: "Foo"/,
  );
  t.regex(
    errors({ hostname: 'a.b' })[0]!,
    /^spec\.hostname: Invalid value: "a\.b": a lowercase RFC 1123 label/,
  );
  t.regex(
    errors({ subdomain: 'x'.repeat(64) })[0]!,
    /^spec\.subdomain: Invalid value: "x+": must be no more than 63 characters/,
  );
});
