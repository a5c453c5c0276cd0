import { readFileSync } from 'node:fs';
import { type IncomingMessage, request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { CliError } from './errors.js';

/** How a CLI command authenticates to the kubelet API (flags as kubectl spells them). */
export interface KubeletCredentials {
  /** PEM contents, read from --client-certificate / --client-key / --certificate-authority. */
  cert?: string;
  key?: string;
  ca?: string;
  token?: string;
}

/** Reads the credential flags' files; an unreadable one is a CliError naming its flag. */
export function readCredentials(flags: {
  'client-certificate'?: string;
  'client-key'?: string;
  'certificate-authority'?: string;
  token?: string;
}): KubeletCredentials {
  const read = (flag: string, path: string | undefined) => {
    if (path === undefined) return undefined;
    try {
      return readFileSync(path, 'utf8');
    } catch (err) {
      throw new CliError(`flag --${flag}: cannot read ${path}: ${(err as Error).message}`);
    }
  };
  const cert = read('client-certificate', flags['client-certificate']);
  const key = read('client-key', flags['client-key']);
  if (!cert !== !key) throw new CliError('flags --client-certificate and --client-key go together');
  const ca = read('certificate-authority', flags['certificate-authority']);
  return {
    ...(cert ? { cert, key } : {}),
    ...(ca ? { ca } : {}),
    ...(flags.token ? { token: flags.token } : {}),
  };
}

/**
 * One GET to the kubelet: https (the kubelet API, with the client certificate or token; its serving
 * certificate checked only against --certificate-authority, as it is usually self-signed) or http (the
 * read-only port).
 */
export function kubeletGet(
  url: URL,
  creds: KubeletCredentials,
  o: { timeoutMs?: number; accept: string },
  onError: (err: Error) => void,
  onResponse: (res: IncomingMessage) => void,
): void {
  const headers: Record<string, string> = { accept: o.accept };
  if (creds.token) headers.authorization = `Bearer ${creds.token}`;
  const common = { agent: false as const, timeout: o.timeoutMs, headers };
  const req =
    url.protocol === 'https:'
      ? httpsRequest(
          url,
          {
            ...common,
            ...(creds.cert ? { cert: creds.cert, key: creds.key } : {}),
            ...(creds.ca ? { ca: creds.ca } : { rejectUnauthorized: false }),
          },
          onResponse,
        )
      : httpRequest(url, common, onResponse);
  req.on('timeout', () => req.destroy(new Error('timeout')));
  req.on('error', onError);
  req.end();
}

/** The URL of `path` on `server`; a server that is not an http(s) URL is a CliError. */
export function kubeletUrl(server: string, path: string, example: string): URL {
  let url: URL;
  try {
    url = new URL(`${server.replace(/\/+$/, '')}${path}`);
  } catch {
    throw new CliError(`--server ${JSON.stringify(server)} is not a URL; write it like ${example}`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new CliError(`--server ${JSON.stringify(server)}: want https:// (the kubelet API) or http://`);
  }
  return url;
}
