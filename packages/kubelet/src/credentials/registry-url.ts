/**
 * Registry locations split the way upstream's keyring splits them: with Go's `net/url` `url.Parse`
 * (the host and the decoded path of `scheme://authority/path?query#fragment`) and `net.SplitHostPort`.
 * Only what the keyring reads is kept; where Go returns an error this returns undefined, so an entry
 * upstream ignores is ignored here too, and a host is compared as written (Go neither lowercases it
 * nor drops a default port, as a WHATWG `URL` would).
 */
export interface RegistryURL {
  /** `host[:port]`, percent-escapes decoded; userinfo dropped. */
  readonly host: string;
  /** The decoded path, `''` when there is none. */
  readonly path: string;
}

// eslint-disable-next-line no-control-regex -- Go refuses control bytes in a URL
const CONTROL = /[\x00-\x1f\x7f]/;
const BAD_ESCAPE = /%(?![0-9a-fA-F]{2})/;
/** ASCII characters Go's url.Parse accepts unescaped in a host (shouldEscape(c, encodeHost) is false). */
const HOST_CHAR = /^[A-Za-z0-9\-_.~!$&'()*+,;=:[\]<>"]$/;
const USERINFO = /^[A-Za-z0-9\-._:~!$&'()*+,;=%@]*$/;

/** `url.Parse(raw)` for a raw URL that has a scheme and `//` (every location the keyring parses). */
export function parseURL(raw: string): RegistryURL | undefined {
  if (CONTROL.test(raw)) return undefined; // "net/url: invalid control character in URL"
  const hash = raw.indexOf('#');
  if (hash >= 0 && BAD_ESCAPE.test(raw.slice(hash + 1))) return undefined;
  let rest = hash >= 0 ? raw.slice(0, hash) : raw;
  const scheme = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//.exec(rest);
  if (!scheme) return undefined;
  rest = rest.slice(scheme[0].length);
  const query = rest.indexOf('?');
  if (query >= 0) rest = rest.slice(0, query);
  const slash = rest.indexOf('/');
  const authority = slash >= 0 ? rest.slice(0, slash) : rest;
  const path = slash >= 0 ? unescapePath(rest.slice(slash)) : '';
  const host = parseAuthority(authority);
  if (host === undefined || path === undefined) return undefined;
  return { host, path };
}

/** Go's `parseAuthority`: userinfo (validated, dropped) `@` host. */
function parseAuthority(authority: string): string | undefined {
  const at = authority.lastIndexOf('@');
  if (at >= 0) {
    const userinfo = authority.slice(0, at);
    if (!USERINFO.test(userinfo) || BAD_ESCAPE.test(userinfo)) return undefined;
  }
  return parseHost(at >= 0 ? authority.slice(at + 1) : authority);
}

/** Go's `parseHost`: a valid optional port after the host (or after `[…]`), then host unescaping. */
function parseHost(host: string): string | undefined {
  if (host.startsWith('[')) {
    const close = host.lastIndexOf(']');
    if (close < 0 || !validOptionalPort(host.slice(close + 1))) return undefined;
  } else {
    const colon = host.lastIndexOf(':');
    if (colon >= 0 && !validOptionalPort(host.slice(colon))) return undefined;
  }
  for (let i = 0; i < host.length; i++) {
    const c = host[i]!;
    if (c === '%') {
      // In a host only `%25` and escapes of non-ASCII bytes are allowed.
      const hex = host.slice(i + 1, i + 3);
      if (!/^[0-9a-fA-F]{2}$/.test(hex) || (parseInt(hex[0]!, 16) < 8 && hex !== '25')) return undefined;
      i += 2;
    } else if (c.charCodeAt(0) < 0x80 && !HOST_CHAR.test(c)) {
      return undefined;
    }
  }
  return percentDecode(host);
}

/** `""`, or `:` followed by digits only. */
function validOptionalPort(port: string): boolean {
  return port === '' || /^:[0-9]*$/.test(port);
}

function unescapePath(path: string): string | undefined {
  return BAD_ESCAPE.test(path) ? undefined : percentDecode(path);
}

/** Decodes `%XX` escapes (already validated) as bytes of UTF-8 text. */
function percentDecode(s: string): string {
  if (!s.includes('%')) return s;
  const bytes: number[] = [];
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '%') {
      bytes.push(parseInt(s.slice(i + 1, i + 3), 16));
      i += 2;
    } else {
      bytes.push(...Buffer.from(s[i]!, 'utf8'));
    }
  }
  return Buffer.from(bytes).toString('utf8');
}

/**
 * Go's `net.SplitHostPort`, as upstream's `SplitURL` uses it: a host that does not split (no port,
 * too many colons, stray brackets) is kept whole with no port.
 */
export function splitHostPort(hostport: string): { host: string; port: string } {
  const whole = { host: hostport, port: '' };
  const colon = hostport.lastIndexOf(':');
  if (colon < 0) return whole;
  let host: string;
  let from = 0;
  let after = 0;
  if (hostport.startsWith('[')) {
    const end = hostport.indexOf(']');
    if (end < 0 || end + 1 !== colon) return whole;
    host = hostport.slice(1, end);
    from = 1;
    after = end + 1;
  } else {
    host = hostport.slice(0, colon);
    if (host.includes(':')) return whole;
  }
  if (hostport.slice(from).includes('[') || hostport.slice(after).includes(']')) return whole;
  return { host, port: hostport.slice(colon + 1) };
}
