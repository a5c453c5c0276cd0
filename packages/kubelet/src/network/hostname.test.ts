import test from 'ava';
import type { Pod } from '@nodelet/api';
import { kernelHostname, podHostnameAndDomain, truncatePodHostname } from './hostname.js';

// Cases of upstream kubelet_pods_test.go (TestTruncatePodHostname, TestGeneratePodHostNameAndDomain) and
// pkg/kubelet/util GetNodenameForKernel.

const pod = (name: string, spec: Pod['spec'] = { containers: [] }, namespace = 'ns'): Pod => ({
  metadata: { name, namespace },
  spec: { ...spec, containers: [] },
});

test('a hostname of 63 characters or fewer is kept', (t) => {
  t.is(truncatePodHostname('p', 'a'.repeat(63)), 'a'.repeat(63));
  t.is(truncatePodHostname('p', 'web-0'), 'web-0');
});

test('a longer one is cut to 63 characters, then trailing - and . are stripped', (t) => {
  t.is(truncatePodHostname('p', 'a'.repeat(70)), 'a'.repeat(63));
  t.is(truncatePodHostname('p', `${'a'.repeat(61)}--b`), 'a'.repeat(61));
  t.is(truncatePodHostname('p', `${'a'.repeat(60)}.-.x`), 'a'.repeat(60));
});

test('the pod name is the hostname unless spec.hostname is set; subdomain gives the domain', (t) => {
  t.deepEqual(podHostnameAndDomain(pod('web-0'), 'cluster.local'), { hostname: 'web-0', domain: '' });
  t.deepEqual(
    podHostnameAndDomain(pod('web-0', { hostname: 'db', subdomain: 'sub', containers: [] }), 'cluster.local'),
    { hostname: 'db', domain: 'sub.ns.svc.cluster.local' },
  );
  const long = 'x'.repeat(70);
  t.is(podHostnameAndDomain(pod(long), 'cluster.local').hostname, 'x'.repeat(63));
});

test('an invalid hostname or subdomain is an error naming the field', (t) => {
  t.throws(() => podHostnameAndDomain(pod('p', { hostname: 'Bad_Name', containers: [] }), 'c'), {
    message: /^pod Hostname "Bad_Name" is not a valid DNS label: a lowercase RFC 1123 label/,
  });
  t.throws(() => podHostnameAndDomain(pod('p', { subdomain: 'a.b', containers: [] }), 'c'), {
    message: /^pod Subdomain "a.b" is not a valid DNS label/,
  });
});

test('setHostnameAsFQDN: the FQDN when there is a domain; over 64 characters it is refused', (t) => {
  t.is(
    kernelHostname({ hostname: 'db', domain: 'sub.ns.svc.cluster.local' }, true),
    'db.sub.ns.svc.cluster.local',
  );
  t.is(kernelHostname({ hostname: 'db', domain: 'sub.ns.svc.cluster.local' }, false), 'db');
  t.is(kernelHostname({ hostname: 'db', domain: '' }, true), 'db');
  const domain = 'sub.ns.svc.cluster.local';
  const hostname = 'h'.repeat(64 - domain.length - 1);
  t.is(kernelHostname({ hostname, domain }, true).length, 64);
  t.throws(() => kernelHostname({ hostname: `${hostname}x`, domain }, true), {
    message: `failed to construct FQDN from pod hostname and cluster domain, FQDN ${hostname}x.${domain} is too long (64 characters is the max, 65 characters requested)`,
  });
});
