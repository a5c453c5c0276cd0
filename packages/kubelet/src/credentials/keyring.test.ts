import test from 'ava';
import { DockerKeyring, type DockerConfig, isDefaultRegistryMatch, urlsMatchStr } from './keyring.js';
import { dockerConfigOfSecret } from './docker-config.js';
import { globMatch } from './host-glob.js';
import { splitHostPort } from './registry-url.js';

// The cases of upstream pkg/credentialprovider/keyring_test.go, as data.

const urlsMatchCases: [glob: string, target: string, match: boolean][] = [
  // match when there is no path component
  ['*.kubernetes.io', 'prefix.kubernetes.io', true],
  ['prefix.*.io', 'prefix.kubernetes.io', true],
  ['prefix.kubernetes.*', 'prefix.kubernetes.io', true],
  ['*-good.kubernetes.io', 'prefix-good.kubernetes.io', true],
  // match with path components
  ['*.kubernetes.io/blah', 'prefix.kubernetes.io/blah', true],
  ['prefix.*.io/foo', 'prefix.kubernetes.io/foo/bar', true],
  // match with path components and ports
  ['*.kubernetes.io:1111/blah', 'prefix.kubernetes.io:1111/blah', true],
  ['prefix.*.io:1111/foo', 'prefix.kubernetes.io:1111/foo/bar', true],
  // no match when number of parts mismatch
  ['*.kubernetes.io', 'kubernetes.io', false],
  ['*.*.kubernetes.io', 'prefix.kubernetes.io', false],
  ['*.*.kubernetes.io', 'kubernetes.io', false],
  // no match when some parts mismatch
  ['kubernetes.io', 'kubernetes.com', false],
  ['k*.io', 'quay.io', false],
  // no match when ports mismatch
  ['*.kubernetes.io:1234/blah', 'prefix.kubernetes.io:1111/blah', false],
  ['prefix.*.io/foo', 'prefix.kubernetes.io:1111/foo/bar', false],
];

for (const [glob, target, match] of urlsMatchCases) {
  test(`URLsMatch ${glob} ~ ${target}: ${match}`, (t) => {
    t.is(urlsMatchStr(glob, target), match);
  });
}

const email = 'foo@bar.baz';
const auth = Buffer.from('foo:bar').toString('base64');
/** A keyring of one dockercfg entry `{ "<location>": { email, auth } }` (foo / bar), as upstream's tests build it. */
function keyringOf(location: string): DockerKeyring {
  const dockercfg = JSON.stringify({ [location]: { email, auth } });
  const keyring = new DockerKeyring();
  keyring.add(
    dockerConfigOfSecret({
      type: 'kubernetes.io/dockercfg',
      data: { '.dockercfg': Buffer.from(dockercfg).toString('base64') },
    })!,
  );
  return keyring;
}

const globHits: [glob: string, target: string][] = [
  ['https://hello.kubernetes.io', 'hello.kubernetes.io'],
  ['https://*.docker.io', 'prefix.docker.io'],
  ['https://prefix.*.io', 'prefix.docker.io'],
  ['https://prefix.docker.*', 'prefix.docker.io'],
  ['https://*.docker.io/path', 'prefix.docker.io/path'],
  ['https://prefix.*.io/path', 'prefix.docker.io/path/subpath'],
  ['https://prefix.docker.*/path', 'prefix.docker.io/path'],
  ['https://*.docker.io:8888', 'prefix.docker.io:8888'],
  ['https://prefix.*.io:8888', 'prefix.docker.io:8888'],
  ['https://prefix.docker.*:8888', 'prefix.docker.io:8888'],
  ['https://*.docker.io/path:1111', 'prefix.docker.io/path:1111'],
  ['https://*.docker.io/v1/', 'prefix.docker.io/path:1111'],
  ['https://*.docker.io/v2/', 'prefix.docker.io/path:1111'],
  ['https://prefix.docker.*/path:1111', 'prefix.docker.io/path:1111'],
  ['prefix.docker.io:1111', 'prefix.docker.io:1111/path'],
  ['*.docker.io:1111', 'prefix.docker.io:1111/path'],
];

for (const [glob, target] of globHits) {
  test(`keyring: ${glob} gives its credentials to ${target}/foo/bar`, (t) => {
    const [found, ...more] = keyringOf(glob).lookup(`${target}/foo/bar`);
    t.like(found, { username: 'foo', password: 'bar', email });
    t.is(more.length, 0);
  });
}

const misses: [glob: string, lookup: string][] = [
  ['https://hello.kubernetes.io', 'world.mesos.org/foo/bar'],
  ['https://*.docker.com', 'prefix.docker.io'],
  ['https://suffix.*.io', 'prefix.docker.io'],
  ['https://prefix.docker.c*', 'prefix.docker.io'],
  ['https://prefix.*.io/path:1111', 'prefix.docker.io/path/subpath:1111'],
  ['suffix.*.io', 'prefix.docker.io'],
];

for (const [glob, lookup] of misses) {
  test(`keyring: ${glob} does not match ${lookup}/foo/bar`, (t) => {
    t.deepEqual(keyringOf(glob).lookup(`${lookup}/foo/bar`), []);
  });
}

test('keyring: Docker Hub credentials are not given to another registry', (t) => {
  t.deepEqual(keyringOf('https://index.docker.io/v1/').lookup('world.mesos.org/foo/bar'), []);
});

for (const image of ['google/docker-registry', 'jenkins', 'index.docker.io/v1//google/docker-registry']) {
  test(`keyring: Docker Hub credentials (https://index.docker.io/v1/) are given to ${image}`, (t) => {
    const found = keyringOf('https://index.docker.io/v1/').lookup(image);
    t.is(found.length, 1);
    t.like(found[0], { username: 'foo', password: 'bar', email });
  });
}

// Upstream TestIsDefaultRegistryMatch.
for (const [image, expected] of [
  ['foo/bar', true],
  ['docker.io/foo/bar', true],
  ['index.docker.io/foo/bar', true],
  ['foo', true],
  ['', false],
  ['registry.tld/foo/bar', false],
  ['registry:5000/foo/bar', false],
  ['myhostdocker.io/foo/bar', false],
] as const) {
  test(`isDefaultRegistryMatch(${JSON.stringify(image)}) is ${expected}`, (t) => {
    t.is(isDefaultRegistryMatch(image), expected);
  });
}

// Upstream TestDockerKeyringLookup: a deeper key first, then the host's.
const ada = { username: 'ada', password: 'smash', email: 'ada@example.com' };
const grace = { username: 'grace', password: 'squash', email: 'grace@example.com' };
for (const [image, expected] of [
  ['bar.example.com', [ada]], // direct match
  ['bar.example.com/pong', [grace, ada]], // direct match deeper than other possible matches
  ['bar.example.com/ping', [ada]], // no direct match, deeper path ignored
  ['bar.example.com/pongz', [grace, ada]], // match first part of path token
  ['bar.example.com/pong/pang', [grace, ada]], // match regardless of sub-path
  ['example.com', []], // no host match
  ['foo.example.com', []],
] as const) {
  test(`keyring lookup ${image}: ${expected.map((c) => c.username).join(', ') || 'nothing'}`, (t) => {
    const keyring = new DockerKeyring();
    keyring.add([
      ['bar.example.com/pong', grace],
      ['bar.example.com', ada],
    ]);
    t.deepEqual(keyring.lookup(image), [...expected]);
  });
}

// Upstream TestIssue3797: an entry with scheme and /v1/ path matches every image of the host.
for (const image of ['quay.io', 'quay.io/foo', 'quay.io/foo/bar']) {
  test(`keyring: https://quay.io/v1/ matches ${image}`, (t) => {
    const rex = { username: 'rex', password: 'tiny arms', email: 'rex@example.com' };
    const keyring = new DockerKeyring();
    keyring.add([['https://quay.io/v1/', rex]]);
    t.deepEqual(keyring.lookup(image), [rex]);
  });
}

// Beyond upstream's tables: what this keyring's users rely on.

test('keyring: every secret with the same location keeps its credentials, in the order added', (t) => {
  const keyring = new DockerKeyring();
  const first: DockerConfig = [['127.0.0.1:5000', { username: 'a', password: '1' }]];
  const second: DockerConfig = [['http://127.0.0.1:5000/v2/', { username: 'b', password: '2' }]];
  keyring.add(first);
  keyring.add(second);
  t.deepEqual(
    keyring.lookup('127.0.0.1:5000/busybox').map((c) => c.username),
    ['a', 'b'],
  );
  t.deepEqual(keyring.lookup('127.0.0.1:5001/busybox'), [], 'another port is another registry');
  t.deepEqual(keyring.lookup('127.0.0.1/busybox'), [], 'no port is not port 5000');
});

test('keyring: docker.io/library/busybox (a normalised Docker Hub name) gets docker.io and index.docker.io credentials', (t) => {
  t.is(keyringOf('docker.io').lookup('docker.io/library/busybox').length, 1);
  t.is(keyringOf('https://index.docker.io/v1/').lookup('docker.io/library/busybox').length, 1);
  t.is(keyringOf('index.docker.io').lookup('docker.io/library/busybox').length, 1);
});

test('keyring: an entry Go would not parse is ignored, the others kept', (t) => {
  const keyring = new DockerKeyring();
  keyring.add([
    ['registry.example.com:port', { username: 'bad', password: '' }],
    ['bad host.example.com', { username: 'bad', password: '' }],
    ['registry.example.com', { username: 'good', password: '' }],
  ]);
  t.deepEqual(
    keyring.lookup('registry.example.com/app').map((c) => c.username),
    ['good'],
  );
});

test('globMatch follows filepath.Match: classes, escapes, malformed patterns match nothing', (t) => {
  t.true(globMatch('reg[0-9]', 'reg7'));
  t.false(globMatch('reg[^0-9]', 'reg7'));
  t.true(globMatch('r?g', 'reg'));
  t.true(globMatch('\\*', '*'));
  t.false(globMatch('\\*', 'x'));
  t.false(globMatch('[a-', 'a'));
  t.false(globMatch('[]a]', 'a'));
  t.false(globMatch('a\\', 'a'));
});

test('splitHostPort follows net.SplitHostPort; what does not split stays whole', (t) => {
  t.deepEqual(splitHostPort('127.0.0.1:5000'), { host: '127.0.0.1', port: '5000' });
  t.deepEqual(splitHostPort('[::1]:5000'), { host: '::1', port: '5000' });
  t.deepEqual(splitHostPort('quay.io'), { host: 'quay.io', port: '' });
  t.deepEqual(splitHostPort('::1'), { host: '::1', port: '' });
  t.deepEqual(splitHostPort('[::1]'), { host: '[::1]', port: '' });
});
