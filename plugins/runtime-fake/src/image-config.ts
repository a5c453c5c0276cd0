/**
 * What the fake knows of an image's configuration (the OCI image config's `User`, `Entrypoint`, `Cmd`)
 * and what its entrypoint writes when it starts, and which references name one image.
 */
import { invalidInput } from '@nodelet/kernel';
import { parseImageRef } from './image-ref.js';

/** One entry of the fake's image table (`images` in the plugin configuration). */
export interface FakeImageConfig {
  /**
   * References of this image. Tagged references are one image: every tag shares one image id, so
   * pulling a second tag adds it to the image already present. A reference without tag or digest
   * (`docker.io/library/nginx`) configures every tag of the repository, each its own image.
   */
  refs: readonly string[];
  /** The image config's `User`: `1000`, `1000:1000`, `nginx` or `nginx:nginx`. Default: root. */
  user?: string;
  /** The image config's `Entrypoint`. */
  entrypoint?: readonly string[];
  /** The image config's `Cmd`. */
  cmd?: readonly string[];
  /** What the entrypoint writes to stdout when a container starts without its own `command`. */
  stdout?: string;
}

/** The image configuration a record keeps (the table entry's fields, refs aside). */
export type ImageConfig = Omit<FakeImageConfig, 'refs'>;

/** Images as their upstream configs have them (user, entrypoint, cmd), for the images users run most. */
export const BUILTIN_IMAGES: readonly FakeImageConfig[] = Object.freeze([
  { refs: ['registry.k8s.io/pause'], user: '65535:65535', entrypoint: ['/pause'] },
  { refs: ['docker.io/library/busybox'], cmd: ['sh'] },
  {
    refs: ['docker.io/library/nginx'],
    entrypoint: ['/docker-entrypoint.sh'],
    cmd: ['nginx', '-g', 'daemon off;'],
    stdout: '/docker-entrypoint.sh: Configuration complete; ready for start up\n',
  },
]);

/** The user ImageStatus reports: containerd reads `User` up to the `:`, a number as uid, else as username. */
export function imageUser(user: string | undefined): { uid: bigint | undefined; username: string } {
  const name = (user ?? '').split(':')[0]!;
  if (name === '') return { uid: undefined, username: '' };
  return /^\d+$/.test(name) ? { uid: BigInt(name), username: '' } : { uid: undefined, username: name };
}

/** The group part of `User` when it is numeric (`1000:2000` → 2000). */
export function imageGroup(user: string | undefined): bigint | undefined {
  const group = (user ?? '').split(':')[1];
  return group !== undefined && /^\d+$/.test(group) ? BigInt(group) : undefined;
}

/** The process a container runs, as a runtime works it out: its command, else the image's entrypoint; its args, else the image's cmd. */
export function effectiveCommand(
  command: readonly string[],
  args: readonly string[],
  image: ImageConfig,
): string[] {
  if (command.length > 0) return [...command, ...args];
  return [...(image.entrypoint ?? []), ...(args.length > 0 ? args : (image.cmd ?? []))];
}

/**
 * The image table: tagged references → their entry, repositories → their entry. Checks every entry
 * and names the bad one (`images[2].refs[0]: …`).
 */
export class ImageTable {
  private readonly byRef = new Map<string, { key: string; config: ImageConfig }>();
  private readonly byRepository = new Map<string, ImageConfig>();

  constructor(entries: readonly FakeImageConfig[]) {
    entries.forEach((entry, i) => {
      if (!Array.isArray(entry.refs) || entry.refs.length === 0)
        throw invalidInput(`images[${i}].refs: give at least one image reference`);
      const { refs, ...config } = entry;
      for (const [name, value] of Object.entries({ entrypoint: config.entrypoint, cmd: config.cmd })) {
        if (value !== undefined && !(Array.isArray(value) && value.every((v) => typeof v === 'string')))
          throw invalidInput(`images[${i}].${name}: a list of strings, not ${JSON.stringify(value)}`);
      }
      let key: string | undefined;
      refs.forEach((ref, j) => {
        let parsed;
        try {
          parsed = parseImageRef(ref);
        } catch (err) {
          throw invalidInput(`images[${i}].refs[${j}]: ${(err as Error).message}`);
        }
        // The first entry naming a reference wins: configured entries come before the built-in ones.
        if (isWholeRepository(ref)) {
          if (!this.byRepository.has(parsed.repository)) this.byRepository.set(parsed.repository, config);
        } else if (!this.byRef.has(parsed.normalized)) {
          this.byRef.set(parsed.normalized, { key: (key ??= parsed.normalized), config });
        }
      });
    });
  }

  /**
   * The configuration of a normalised reference and the key of the image it belongs to: tags of one
   * entry share the key (and so the id); other references are their own image.
   */
  lookup(normalized: string, repository: string): { key: string; config: ImageConfig } {
    return this.byRef.get(normalized) ?? { key: normalized, config: this.byRepository.get(repository) ?? {} };
  }
}

/** A reference without tag or digest in its last path segment stands for the whole repository. */
export function isWholeRepository(ref: string): boolean {
  return !/[:@]/.test(ref.slice(ref.lastIndexOf('/') + 1));
}
