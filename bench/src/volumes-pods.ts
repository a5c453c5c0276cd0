/**
 * The objects and pods of the volumes benchmark (volumes.ts), and the check of what a pod's volumes hold:
 * a ConfigMap, a Secret and the namespace's ServiceAccount and `kube-root-ca.crt`, as a cluster has them;
 * pods as the API server stores them (defaults applied), with or without the three volumes.
 */
import { readFile, readlink } from 'node:fs/promises';
import { join } from 'node:path';
import { applyPodDefaults, type Pod, type Volume } from '@nodelet/api';
import type { FakeKubeApi } from '@nodelet/client/testing';
import {
  serviceAccountTokenMountPath,
  serviceAccountVolumePrefix,
  tokenVolumeSource,
} from '@nodelet/controlplane';
import { volumeDir } from '@nodelet/kubelet';

export const NODE_NAME = 'bench-node';
export const NAMESPACE = 'default';
export const IMAGE = 'busybox:1.36';
const SERVICE_ACCOUNT = 'default';
export const TOKEN_SECONDS = 3607;

/** An application's configuration: a properties file of about 1 KiB and a one-line setting. */
export const CONFIG_DATA: Record<string, string> = {
  'app.properties': Array.from(
    { length: 16 },
    (_, i) => `app.setting${i}=value-${i}-${'x'.repeat(40)}\n`,
  ).join(''),
  'log.level': 'info\n',
};

/** Credentials, as they are after the kubelet decodes the Secret's base64. */
export const SECRET_DATA: Record<string, string> = {
  username: 'bench',
  password: 'b3f1c9a2-7d4e-4c55-9a1e-2f6d8c0b7e13',
};

/** A PEM block the size of a cluster CA certificate (about 1.1 KiB). */
export const CA_CRT = (() => {
  const der = Buffer.from(Array.from({ length: 800 }, (_, i) => (i * 131 + 7) & 0xff)).toString('base64');
  const lines = der.match(/.{1,64}/g)!.join('\n');
  return `-----BEGIN CERTIFICATE-----\n${lines}\n-----END CERTIFICATE-----\n`;
})();

/** What exists before t0: the ServiceAccount, its CA ConfigMap, and the objects the pods mount. */
export function seedObjects(api: FakeKubeApi): void {
  const ns = `/api/v1/namespaces/${NAMESPACE}`;
  api.put(`${ns}/serviceaccounts`, { metadata: { name: SERVICE_ACCOUNT, uid: 'sa-default' } });
  api.put(`${ns}/configmaps`, { metadata: { name: 'kube-root-ca.crt' }, data: { 'ca.crt': CA_CRT } });
  api.put(`${ns}/configmaps`, { metadata: { name: 'app-config' }, data: CONFIG_DATA });
  const encoded = Object.entries(SECRET_DATA).map(([k, v]) => [k, Buffer.from(v).toString('base64')]);
  api.put(`${ns}/secrets`, {
    metadata: { name: 'app-secret' },
    type: 'Opaque',
    data: Object.fromEntries(encoded),
  });
}

/** Upstream's name-suffix alphabet (no vowels, no 0/1/3): five characters from the pod's index. */
function suffix(i: number): string {
  const alphabet = 'bcdfghjklmnpqrstvwxz2456789';
  let out = '';
  for (let k = 0, x = i; k < 5; k++, x = Math.floor(x / alphabet.length))
    out += alphabet[x % alphabet.length];
  return out;
}

export const accessVolumeName = (i: number) => `${serviceAccountVolumePrefix}-${suffix(i)}`;

/**
 * `bench-<i>`: one busybox container. With volumes: `config` (the ConfigMap), `secret` (the Secret) and
 * the `kube-api-access-*` projected volume exactly as ServiceAccount admission adds it, each mounted.
 */
export function benchPod(i: number, withVolumes: boolean): Pod {
  const pod: Pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: `bench-${i}`, namespace: NAMESPACE },
    spec: {
      nodeName: NODE_NAME,
      serviceAccountName: SERVICE_ACCOUNT,
      serviceAccount: SERVICE_ACCOUNT,
      containers: [{ name: 'main', image: IMAGE, command: ['sleep', 'infinity'] }],
    },
  };
  if (withVolumes) {
    const access = accessVolumeName(i);
    pod.spec!.volumes = [
      { name: 'config', configMap: { name: 'app-config' } },
      { name: 'secret', secret: { secretName: 'app-secret' } },
      { name: access, projected: tokenVolumeSource() as Volume['projected'] },
    ];
    pod.spec!.containers[0]!.volumeMounts = [
      { name: 'config', mountPath: '/etc/config', readOnly: true },
      { name: 'secret', mountPath: '/etc/secret', readOnly: true },
      { name: access, mountPath: serviceAccountTokenMountPath, readOnly: true },
    ];
  }
  return applyPodDefaults(pod);
}

/** The three volume directories of a pod, as the kubelet lays them out, with the files each must hold. */
export function expectedVolumes(rootDir: string, uid: string, i: number) {
  return [
    { dir: volumeDir(rootDir, uid, 'kubernetes.io/configmap', 'config'), files: CONFIG_DATA },
    { dir: volumeDir(rootDir, uid, 'kubernetes.io/secret', 'secret'), files: SECRET_DATA },
    {
      dir: volumeDir(rootDir, uid, 'kubernetes.io/projected', accessVolumeName(i)),
      files: { 'ca.crt': CA_CRT, namespace: NAMESPACE },
      token: 'token',
    },
  ];
}

/**
 * What is wrong with pod `i`'s volume files (nothing: []): every file read through its user-visible link
 * with the content expected, `..data` a link to a timestamped directory, and the token one the API issued
 * for this pod with the lifetime asked for.
 */
export async function volumeProblems(rootDir: string, uid: string, i: number): Promise<string[]> {
  const problems: string[] = [];
  for (const { dir, files, token } of expectedVolumes(rootDir, uid, i)) {
    const data = await readlink(join(dir, '..data')).catch(() => '');
    if (!data.startsWith('..2')) problems.push(`${dir}/..data: not a link to a timestamped directory`);
    for (const [key, want] of Object.entries(files)) {
      const got = await readFile(join(dir, key), 'utf8').catch((err: Error) => `(${err.message})`);
      if (got !== want) problems.push(`${dir}/${key}: ${JSON.stringify(got.slice(0, 60))}`);
    }
    if (!token) continue;
    const text = await readFile(join(dir, token), 'utf8').catch(() => '');
    const claims = decodeClaims(text);
    const ok =
      claims?.pod === uid &&
      claims.sub === `system:serviceaccount:${NAMESPACE}:${SERVICE_ACCOUNT}` &&
      claims.exp - claims.iat === TOKEN_SECONDS;
    if (!ok) problems.push(`${dir}/${token}: not this pod's token: ${JSON.stringify(text.slice(0, 60))}`);
  }
  return problems;
}

/** The claims of a JWT-shaped token (header.claims.signature), or undefined. */
function decodeClaims(token: string): { pod?: string; sub?: string; exp: number; iat: number } | undefined {
  try {
    return JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString());
  } catch {
    return undefined;
  }
}

/** `count` indices spread evenly over 0…n−1, the first and the last included. */
export function sampleIndices(n: number, count: number): number[] {
  if (count >= n) return Array.from({ length: n }, (_, i) => i);
  if (count <= 1) return [0];
  return [...new Set(Array.from({ length: count }, (_, k) => Math.round((k * (n - 1)) / (count - 1))))];
}
