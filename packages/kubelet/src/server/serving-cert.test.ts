import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { loadServingCertificate } from './serving-cert.js';

function tmp(t: { teardown: (fn: () => void) => void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-serving-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('self-signed: <certDir>/kubelet.crt|.key, CN <hostname>@<seconds>, SANs hostname and IPs, key 0600, reused', async (t) => {
  const dir = tmp(t);
  const now = Date.UTC(2026, 0, 2);
  const first = await loadServingCertificate({
    certDir: join(dir, 'pki'),
    hostname: 'node-a',
    ips: ['192.0.2.5'],
    now,
  });
  const cert = new X509Certificate(first.certPem);
  t.is(cert.subject, `CN=node-a@${now / 1000}`);
  t.is(cert.subjectAltName, 'DNS:node-a, IP Address:192.0.2.5');
  t.is(readFileSync(join(dir, 'pki', 'kubelet.crt'), 'utf8'), first.certPem);
  t.is(statSync(join(dir, 'pki', 'kubelet.key')).mode & 0o777, 0o600);
  const again = await loadServingCertificate({ certDir: join(dir, 'pki'), hostname: 'node-a' });
  t.deepEqual(again, first, 'reused while both files can be read');
});

test('tlsCertFile/tlsPrivateKeyFile: read as given; both or neither; an unreadable or bad file is named', async (t) => {
  const dir = tmp(t);
  const made = await loadServingCertificate({ certDir: dir, hostname: 'x' });
  writeFileSync(join(dir, 'a.crt'), made.certPem);
  writeFileSync(join(dir, 'a.key'), made.keyPem);
  const given = await loadServingCertificate({
    tlsCertFile: join(dir, 'a.crt'),
    tlsPrivateKeyFile: join(dir, 'a.key'),
    certDir: join(dir, 'unused'),
    hostname: 'x',
  });
  t.deepEqual(given, made);
  await t.throwsAsync(
    loadServingCertificate({ tlsCertFile: join(dir, 'a.crt'), certDir: dir, hostname: 'x' }),
    {
      message: /set both or neither/,
    },
  );
  await t.throwsAsync(
    loadServingCertificate({
      tlsCertFile: join(dir, 'no.crt'),
      tlsPrivateKeyFile: join(dir, 'a.key'),
      certDir: dir,
      hostname: 'x',
    }),
    { message: new RegExp(`cannot read ${join(dir, 'no.crt')}`) },
  );
  writeFileSync(join(dir, 'bad.crt'), 'not pem');
  await t.throwsAsync(
    loadServingCertificate({
      tlsCertFile: join(dir, 'bad.crt'),
      tlsPrivateKeyFile: join(dir, 'a.key'),
      certDir: dir,
      hostname: 'x',
    }),
    { message: new RegExp(`${join(dir, 'bad.crt')} is not a PEM certificate`) },
  );
});
