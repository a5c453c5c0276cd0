/**
 * A throw-away image for tests that remove images from a real containerd: one small layer with a
 * file unique to the call, so its id is new and removing it (CRI RemoveImage removes every name of
 * an image id) cannot touch the shared busybox or pause images. Built as an OCI image layout and
 * imported with `ctr -n k8s.io images import`: no registry is involved.
 */
import { execFile } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { containerdSocket } from './containerd.js';

const run = promisify(execFile);

const OCI_ARCH: Record<string, string> = {
  x64: 'amd64',
  arm64: 'arm64',
  arm: 'arm',
  ppc64: 'ppc64le',
  s390x: 's390x',
};

export interface TestImage {
  /** The full reference it was imported under. */
  ref: string;
  /** Its id (`sha256:` + the config digest), as CRI reports it. */
  id: string;
}

function sha256(data: Buffer | string): string {
  return createHash('sha256').update(data).digest('hex');
}

/**
 * Builds and imports an image named `ref` (a full reference: `nodelet.test/conformance:abc`) into
 * containerd's `k8s.io` namespace. The image has no shell; it is for image tests, not containers.
 */
export async function importTestImage(ref: string, options: { socket?: string } = {}): Promise<TestImage> {
  const socket = options.socket ?? containerdSocket();
  const dir = await mkdtemp(join(tmpdir(), 'nodelet-test-image-'));
  try {
    const rootfs = join(dir, 'rootfs');
    const layout = join(dir, 'layout');
    const blobs = join(layout, 'blobs', 'sha256');
    await mkdir(rootfs);
    await mkdir(blobs, { recursive: true });
    await writeFile(join(rootfs, 'nodelet-test-image.txt'), `${ref} ${randomUUID()}\n`);
    const layerTar = join(dir, 'layer.tar');
    await run(
      'tar',
      [
        '--create',
        '--file',
        layerTar,
        '--directory',
        rootfs,
        '--format=gnu',
        '--owner=0',
        '--group=0',
        '--numeric-owner',
        'nodelet-test-image.txt',
      ],
      { timeout: 30_000 },
    );
    const layer = await readFile(layerTar);
    const blob = async (data: Buffer | string) => {
      const digest = sha256(data);
      await writeFile(join(blobs, digest), data);
      return { digest: `sha256:${digest}`, size: Buffer.byteLength(data) };
    };
    const layerBlob = await blob(layer);
    const architecture = OCI_ARCH[process.arch] ?? process.arch;
    const config = await blob(
      JSON.stringify({
        architecture,
        os: 'linux',
        config: { Cmd: ['/nodelet-test-image.txt'] },
        rootfs: { type: 'layers', diff_ids: [layerBlob.digest] },
      }),
    );
    const manifest = await blob(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: 'application/vnd.oci.image.manifest.v1+json',
        config: { mediaType: 'application/vnd.oci.image.config.v1+json', ...config },
        layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar', ...layerBlob }],
      }),
    );
    await writeFile(
      join(layout, 'index.json'),
      JSON.stringify({
        schemaVersion: 2,
        mediaType: 'application/vnd.oci.image.index.v1+json',
        manifests: [
          {
            mediaType: 'application/vnd.oci.image.manifest.v1+json',
            ...manifest,
            platform: { architecture, os: 'linux' },
            annotations: { 'io.containerd.image.name': ref, 'org.opencontainers.image.ref.name': ref },
          },
        ],
      }),
    );
    await writeFile(join(layout, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
    const imageTar = join(dir, 'image.tar');
    await run(
      'tar',
      [
        '--create',
        '--file',
        imageTar,
        '--directory',
        layout,
        '--format=gnu',
        'oci-layout',
        'index.json',
        'blobs',
      ],
      { timeout: 30_000 },
    );
    await run(
      'ctr',
      ['--address', socket, '--namespace', 'k8s.io', 'images', 'import', '--all-platforms', imageTar],
      { timeout: 60_000 },
    );
    return { ref, id: config.digest };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Removes what `importTestImage` made, by every name it may have; for cleanup after a failed test. */
export async function removeTestImage(image: TestImage, options: { socket?: string } = {}): Promise<void> {
  const socket = options.socket ?? containerdSocket();
  await run('ctr', ['--address', socket, '--namespace', 'k8s.io', 'images', 'rm', image.ref, image.id], {
    timeout: 30_000,
  }).catch(() => undefined);
}
