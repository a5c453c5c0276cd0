import test from 'ava';
import { formatFieldError } from '@nodelet/api';
import { validateEndpointSlice, validateService } from './validation.js';

const messages = (errs: ReturnType<typeof validateService>) => errs.map(formatFieldError);

test('a port out of range names the field and the range', (t) => {
  const errs = validateService({
    kind: 'Service',
    metadata: { name: 'web' },
    spec: { clusterIP: '10.96.0.10', ports: [{ port: 70000 }] },
  });
  t.deepEqual(messages(errs), [
    'spec.ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive',
  ]);
});

test('service fields the rules depend on are checked', (t) => {
  const errs = messages(
    validateService({
      kind: 'Service',
      metadata: { name: 'web' },
      spec: {
        clusterIP: '10.96.0.300',
        sessionAffinity: 'Sticky',
        externalTrafficPolicy: 'Nearby',
        externalIPs: ['x'],
        ports: [
          { name: 'a', port: 80, protocol: 'ICMP' },
          { name: 'a', port: 81, nodePort: -1 },
        ],
      },
    }),
  );
  t.true(errs.some((e) => e.startsWith('spec.clusterIP: Invalid value: "10.96.0.300"')));
  t.true(errs.some((e) => e.startsWith('spec.sessionAffinity: Unsupported value: "Sticky"')));
  t.true(errs.some((e) => e.startsWith('spec.externalTrafficPolicy: Unsupported value')));
  t.true(errs.some((e) => e.startsWith('spec.externalIPs[0]: Invalid value')));
  t.true(errs.some((e) => e.startsWith('spec.ports[0].protocol: Unsupported value: "ICMP"')));
  t.true(errs.some((e) => e === 'spec.ports[1].name: Duplicate value: "a"'));
  t.true(errs.some((e) => e.startsWith('spec.ports[1].nodePort: Invalid value: -1')));
});

test('headless and ExternalName services are valid and simply not proxied', (t) => {
  t.deepEqual(
    validateService({ metadata: { name: 'h' }, spec: { clusterIP: 'None', ports: [{ port: 80 }] } }),
    [],
  );
  t.deepEqual(
    validateService({ metadata: { name: 'e' }, spec: { type: 'ExternalName', externalName: 'x.example' } }),
    [],
  );
});

test('a bad endpoint address names the endpoint and the address', (t) => {
  const errs = validateEndpointSlice({
    kind: 'EndpointSlice',
    metadata: { name: 'web-1', labels: { 'kubernetes.io/service-name': 'web' } },
    addressType: 'IPv4',
    endpoints: [{ addresses: ['10.0.0.1'] }, { addresses: ['10.0.0.256'] }],
    ports: [{ name: 'http', port: 8080 }],
  });
  t.deepEqual(messages(errs), [
    'endpoints[1].addresses[0]: Invalid value: "10.0.0.256": must be a valid IPv4 address',
  ]);
});

test('an EndpointSlice needs its service-name label', (t) => {
  const errs = validateEndpointSlice({ metadata: { name: 's' }, addressType: 'IPv4', endpoints: [] });
  t.deepEqual(messages(errs), [
    'metadata.labels[kubernetes.io/service-name]: Required value: the name of the Service',
  ]);
});
