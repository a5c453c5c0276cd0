import { invalidInput } from '@nodelet/kernel';

/**
 * Image references, normalised the way containerd's CRI plugin does it (docker/distribution's
 * `ParseNormalizedNamed` followed by `TagNameOnly`):
 *
 *     busybox                      → docker.io/library/busybox:latest
 *     nginx:1.25                   → docker.io/library/nginx:1.25
 *     user/app                     → docker.io/user/app:latest
 *     registry.k8s.io/pause:3.9    → registry.k8s.io/pause:3.9
 *     localhost:5000/app           → localhost:5000/app:latest
 *     busybox:1.36@sha256:<hex>    → docker.io/library/busybox@sha256:<hex>   (a digest wins over a tag)
 */
export interface ImageRef {
  /** Registry host, with port: `docker.io`, `registry.k8s.io`, `localhost:5000`. */
  readonly domain: string;
  /** Repository path inside the registry: `library/busybox`. */
  readonly path: string;
  /** `domain/path`. */
  readonly repository: string;
  readonly tag?: string;
  /** `sha256:<hex>`. */
  readonly digest?: string;
  /** The normalised reference: `repository:tag` or `repository@digest`. */
  readonly normalized: string;
}

const DEFAULT_DOMAIN = 'docker.io';
const LEGACY_DEFAULT_DOMAIN = 'index.docker.io';
const OFFICIAL_REPO_PREFIX = 'library/';
const MAX_NAME_LENGTH = 255;

const DOMAIN_LABEL = '(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])';
const DOMAIN = new RegExp(`^${DOMAIN_LABEL}(?:\\.${DOMAIN_LABEL})*(?::[0-9]+)?$`);
const PATH_COMPONENT = /^[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*$/;
const TAG = /^[\w][\w.-]{0,127}$/;
const DIGEST = /^[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}$/;
const SHA256_DIGEST = /^sha256:[0-9a-f]{64}$/;
const IMAGE_ID = /^(?:sha256:)?[0-9a-f]{64}$/;

function malformed(ref: string, why?: string): Error {
  return invalidInput(
    `failed to parse image reference "${ref}": invalid reference format${why ? `: ${why}` : ''}`,
  );
}

/** Parses and normalises `ref`; InvalidInput when it is not a well-formed reference. */
export function parseImageRef(ref: string): ImageRef {
  if (ref === '' || ref !== ref.trim()) throw malformed(ref);
  if (IMAGE_ID.test(ref) && !ref.startsWith('sha256:')) {
    throw malformed(ref, 'cannot specify 64-byte hexadecimal strings');
  }

  let rest = ref;
  let digest: string | undefined;
  const at = rest.indexOf('@');
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!DIGEST.test(digest)) throw malformed(ref, 'invalid digest');
    if (digest.startsWith('sha256:') && !SHA256_DIGEST.test(digest))
      throw malformed(ref, 'invalid sha256 digest');
  }

  let tag: string | undefined;
  const colon = rest.lastIndexOf(':');
  if (colon > rest.lastIndexOf('/')) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
    if (!TAG.test(tag)) throw malformed(ref, 'invalid tag');
  }

  let domain = DEFAULT_DOMAIN;
  let path = rest;
  const slash = rest.indexOf('/');
  if (slash >= 0) {
    const first = rest.slice(0, slash);
    // The first component is a registry host when it looks like one (docker's rule).
    if (/[.:]/.test(first) || first === 'localhost' || first !== first.toLowerCase()) {
      domain = first;
      path = rest.slice(slash + 1);
    }
  }
  if (domain === LEGACY_DEFAULT_DOMAIN) domain = DEFAULT_DOMAIN;
  if (!DOMAIN.test(domain)) throw malformed(ref, 'invalid registry host');
  if (path !== path.toLowerCase()) throw malformed(ref, 'repository name must be lowercase');
  if (path === '' || !path.split('/').every((c) => PATH_COMPONENT.test(c))) throw malformed(ref);
  if (domain === DEFAULT_DOMAIN && !path.includes('/')) path = OFFICIAL_REPO_PREFIX + path;

  const repository = `${domain}/${path}`;
  if (repository.length > MAX_NAME_LENGTH)
    throw malformed(ref, `repository name must not be more than ${MAX_NAME_LENGTH} characters`);
  // containerd keeps only the digest of a reference that has both.
  if (digest !== undefined) tag = undefined;
  else tag ??= 'latest';
  const normalized = digest !== undefined ? `${repository}@${digest}` : `${repository}:${tag}`;
  return {
    domain,
    path,
    repository,
    ...(tag !== undefined && { tag }),
    ...(digest !== undefined && { digest }),
    normalized,
  };
}

/** The normalised form of `ref` (`busybox` → `docker.io/library/busybox:latest`); InvalidInput if malformed. */
export function normalizeImageRef(ref: string): string {
  return parseImageRef(ref).normalized;
}

/** True for an image id (`sha256:<64 hex>` or the bare 64 hex digits), which names an image without a reference. */
export function isImageId(ref: string): boolean {
  return IMAGE_ID.test(ref);
}
