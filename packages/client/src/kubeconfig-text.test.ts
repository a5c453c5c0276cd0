import test from 'ava';
import { parse } from 'yaml';
import { parseKubeconfigText, readPlainYaml } from './kubeconfig-text.js';

// As nodelet writes it (the yaml package's style: sequences indented under their key).
const nodeletStyle = `apiVersion: v1
kind: Config
clusters:
  - name: nodelet
    cluster:
      server: https://127.0.0.1:6443
      certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJhak==
users:
  - name: nodelet-admin
    user:
      client-certificate-data: LS0tLS1CRUdJTg==
      client-key-data: LS0tLS1CRUdJTiBQUklW
contexts:
  - name: nodelet
    context:
      cluster: nodelet
      user: nodelet-admin
current-context: nodelet
preferences: {}
`;

// As kubectl writes it (sequences at their key's indent), with quoting, booleans, nulls and comments.
const kubectlStyle = `---
# written by kubectl
apiVersion: v1
clusters:
- cluster:
    insecure-skip-tls-verify: true
    server: "https://10.0.0.1:6443/a\\"b"
    tls-server-name: 'it''s'
  name: kind-kind
contexts:
- context:
    cluster: kind-kind
    namespace: default
    user: kind-kind
  name: kind-kind
current-context: kind-kind
kind: Config
preferences:
users:
- name: kind-kind
  user:
    token:   abc.def_ghi
    as-groups:
    - system:masters
    - - nested
    extensions: []
    disabled: FALSE
    nothing: ~
`;

test('the plain block shape is read as the yaml package reads it', (t) => {
  for (const text of [nodeletStyle, kubectlStyle, kubectlStyle.replace(/\n/g, '\r\n')]) {
    const plain = readPlainYaml(text);
    t.not(plain, undefined);
    t.deepEqual(plain, parse(text));
  }
});

test('anything else is left to the yaml package, which reads it the same', (t) => {
  const others = [
    'a: [x, y]\n',
    'a: &x 1\nb: *x\n',
    'a: !!str 1\n',
    'a: |\n  text\n',
    'a: one\n  two\n',
    'a: 1\n',
    'a: 0x1f\n',
    'a: .inf\n',
    'a: 12345abc\n',
    'a: x # comment\n',
    'a:\n\tb: 1\n',
    'a: "x\\u0041"\n',
    '"a": 1\n',
    'a: x: y\n',
    '- a\n  - b\n',
    'a: 1\na: 2\n',
    'plain\n',
    'null: a\n',
    'true: a\n',
    '1: a\n',
    '',
  ];
  for (const text of others) {
    t.is(readPlainYaml(text), undefined, JSON.stringify(text));
    let expected: unknown;
    try {
      expected = parse(text);
    } catch {
      t.throws(() => parseKubeconfigText(text), undefined, JSON.stringify(text));
      continue;
    }
    t.deepEqual(parseKubeconfigText(text), expected, JSON.stringify(text));
  }
});

test('JSON is read as JSON', (t) => {
  t.deepEqual(parseKubeconfigText('{"apiVersion": "v1", "clusters": []}'), {
    apiVersion: 'v1',
    clusters: [],
  });
  t.deepEqual(parseKubeconfigText('{a: 1}'), { a: 1 });
});
