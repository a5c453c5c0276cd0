import type { Logger } from '@nodelet/kernel';
import { globMatch } from './host-glob.js';
import { parseURL, type RegistryURL, splitHostPort } from './registry-url.js';

/** One registry login, as upstream's keyring keeps it (the CRI AuthConfig gets username and password). */
export interface RegistryCredential {
  readonly username: string;
  readonly password: string;
  readonly email?: string;
  /** The Secret it came from, `namespace/name` (for messages; never its content). */
  readonly source?: string;
}

/** The entries of a docker config (`.dockercfg`, or `auths` of `.dockerconfigjson`), in file order. */
export type DockerConfig = ReadonlyArray<readonly [location: string, credential: RegistryCredential]>;

/** Upstream's defaultRegistryHost: Docker Hub's credentials are keyed `https://index.docker.io/v1/`. */
const DEFAULT_REGISTRY_HOST = 'index.docker.io';

/**
 * Registry credentials indexed by location (upstream pkg/credentialprovider BasicDockerKeyring).
 *
 * A location is a URL with or without scheme: `https://quay.io/v1/`, `registry.example.com:5000`,
 * `*.example.com/team`. Its key is host and path (`/v1/` and `/v2/` count as no path). An image
 * matches a key when the ports are equal, the host has as many dot-separated parts and each part
 * matches the key's glob, and the key's path is a prefix of the image's path. Keys are tried in
 * reverse lexical order, so `quay.io/team` comes before `quay.io`; every matching key's credentials
 * are returned, most specific first. When nothing matches, an image of Docker Hub (`busybox`,
 * `user/app`, `docker.io/…`, `index.docker.io/…`) gets the `index.docker.io` credentials.
 */
export class DockerKeyring {
  private index: string[] = [];
  private readonly creds = new Map<string, RegistryCredential[]>();

  constructor(private readonly logger?: Logger) {}

  get empty(): boolean {
    return this.index.length === 0;
  }

  add(config: DockerConfig): void {
    for (const [location, credential] of config) {
      const value = /^https?:\/\//.test(location) ? location : `https://${location}`;
      const parsed = parseURL(value);
      if (!parsed) {
        this.logger?.error('Entry in dockercfg invalid, ignoring', { entry: location });
        continue;
      }
      // The docker client also takes /v1/ and /v2/ for the bare host (docker/registry ResolveAuthConfig).
      let path = parsed.path;
      if (path.startsWith('/v2/') || path.startsWith('/v1/')) path = path.slice(3);
      const key = path !== '' && path !== '/' ? parsed.host + path : parsed.host;
      const list = this.creds.get(key);
      if (list) list.push(credential);
      else this.creds.set(key, [credential]);
    }
    this.index = [...this.creds.keys()].sort().reverse();
  }

  /** The credentials to try for `image` (a repository without tag or digest), most specific first. */
  lookup(image: string): RegistryCredential[] {
    const found: RegistryCredential[] = [];
    for (const key of this.index) {
      if (urlsMatchStr(key, image)) found.push(...this.creds.get(key)!);
    }
    if (found.length > 0) return found;
    if (isDefaultRegistryMatch(image)) return [...(this.creds.get(DEFAULT_REGISTRY_HOST) ?? [])];
    return [];
  }
}

/** Whether `image` is pulled from Docker Hub, judged by its name as the docker client does. */
export function isDefaultRegistryMatch(image: string): boolean {
  const slash = image.indexOf('/');
  const first = slash < 0 ? image : image.slice(0, slash);
  if (first === '') return false;
  if (slash < 0) return true; // `busybox`
  if (first === 'docker.io' || first === 'index.docker.io') return true;
  // A first component with `.` or `:` is a registry host, not a Docker Hub user.
  return !/[.:]/.test(first);
}

/** Upstream URLsMatchStr: both are schemeless URLs; `glob` may have wildcards in its host. */
export function urlsMatchStr(glob: string, target: string): boolean {
  const globURL = parseURL(`https://${glob}`);
  const targetURL = parseURL(`https://${target}`);
  return globURL !== undefined && targetURL !== undefined && urlsMatch(globURL, targetURL);
}

function urlsMatch(glob: RegistryURL, target: RegistryURL): boolean {
  const g = splitHostPort(glob.host);
  const t = splitHostPort(target.host);
  if (g.port !== t.port) return false;
  const globParts = g.host.split('.');
  const targetParts = t.host.split('.');
  if (globParts.length !== targetParts.length) return false;
  if (!target.path.startsWith(glob.path)) return false;
  return globParts.every((part, i) => globMatch(part, targetParts[i]!));
}
