/**
 * How the API server reaches a kubelet (upstream `--kubelet-client-certificate`, `--kubelet-preferred-
 * address-types`, `--kubelet-certificate-authority`): the node's address by preferred type and its
 * `daemonEndpoints.kubeletEndpoint.Port`, over TLS with the API server's kubelet client certificate.
 */
import { X509Certificate } from 'node:crypto';
import { request as httpsRequest } from 'node:https';
import type { IncomingMessage } from 'node:http';
import { connect as tlsConnect, createSecureContext, type SecureContext, type TLSSocket } from 'node:tls';
import type { KubeObject } from '../object.js';
import { ApiError } from './status.js';

/**
 * `--kubelet-preferred-address-types` as kubeadm sets it (kube-apiserver's own default puts Hostname
 * first, which only works where node names resolve — they seldom do, and nodelet up's never).
 */
export const preferredAddressTypes = ['InternalIP', 'ExternalIP', 'Hostname'];

export interface KubeletEndpoint {
  host: string;
  port: number;
}

/** Where the kubelet of `node` listens; 503 when the node publishes no usable address or port. */
export function kubeletEndpoint(node: KubeObject, types = preferredAddressTypes): KubeletEndpoint {
  const name = node.metadata.name;
  const addresses = (node.status?.addresses ?? []) as { type?: string; address?: string }[];
  let host: string | undefined;
  for (const type of types) {
    host = addresses.find((a) => a.type === type && a.address)?.address;
    if (host) break;
  }
  if (!host) {
    const known = addresses.map((a) => `${a.type}:${a.address}`).join(', ');
    throw new ApiError(
      503,
      'ServiceUnavailable',
      `no preferred addresses found for node ${name}; known addresses: [${known}]`,
    );
  }
  const port = Number(node.status?.daemonEndpoints?.kubeletEndpoint?.Port ?? 0);
  if (!Number.isInteger(port) || port <= 0 || port > 65535) {
    throw new ApiError(503, 'ServiceUnavailable', `node ${name} reports no kubelet endpoint port`);
  }
  return { host, port };
}

export interface KubeletClientOptions {
  /** The API server's kubelet client certificate and key. */
  cert: string;
  key: string;
  /** The cluster CA: a kubelet certificate that claims it as issuer must verify against it. */
  ca: string;
  /** Bound on connecting and on waiting for response headers. */
  timeoutMs?: number;
}

export class KubeletClient {
  private readonly caCert: X509Certificate;
  /** The client certificate, key and CA parsed once: building it per request showed in profiles. */
  private readonly secureContext: SecureContext;

  constructor(private readonly options: KubeletClientOptions) {
    this.caCert = new X509Certificate(options.ca);
    this.secureContext = createSecureContext({ cert: options.cert, key: options.key, ca: options.ca });
  }

  /** A request to `path` (with query) on the kubelet at `endpoint`; resolves with the response head. */
  request(
    endpoint: KubeletEndpoint,
    path: string,
    init: { method?: string; headers?: Record<string, string>; signal?: AbortSignal } = {},
  ): Promise<IncomingMessage> {
    return new Promise((resolve, reject) => {
      const req = httpsRequest({
        ...this.tlsOptions(endpoint),
        agent: false,
        method: init.method ?? 'GET',
        path,
        headers: init.headers ?? {},
        ...(init.signal ? { signal: init.signal } : {}),
      });
      req.setTimeout(this.options.timeoutMs ?? 30_000, () =>
        req.destroy(new Error(`no answer within ${this.options.timeoutMs ?? 30_000} ms`)),
      );
      req.on('socket', (socket) =>
        socket.once('secureConnect', () => {
          const problem = this.certificateProblem(socket as TLSSocket);
          if (problem) req.destroy(new Error(problem));
        }),
      );
      req.on('response', (res) => {
        req.setTimeout(0);
        resolve(res);
      });
      req.on('error', (err) => reject(unreachable(endpoint, err)));
      req.end();
    });
  }

  /** A TLS connection to the kubelet, checked as `request` checks it, for upgraded streams. */
  connect(endpoint: KubeletEndpoint): Promise<TLSSocket> {
    return new Promise((resolve, reject) => {
      const socket = tlsConnect({ ...this.tlsOptions(endpoint), ALPNProtocols: ['http/1.1'] });
      const timer = setTimeout(
        () => socket.destroy(new Error('TLS handshake timed out')),
        this.options.timeoutMs ?? 30_000,
      );
      socket.once('secureConnect', () => {
        clearTimeout(timer);
        const problem = this.certificateProblem(socket);
        if (problem) {
          socket.destroy();
          reject(unreachable(endpoint, new Error(problem)));
        } else resolve(socket);
      });
      socket.once('error', (err) => {
        clearTimeout(timer);
        reject(unreachable(endpoint, err));
      });
    });
  }

  private tlsOptions(endpoint: KubeletEndpoint) {
    return {
      host: endpoint.host,
      port: endpoint.port,
      secureContext: this.secureContext,
      // Checked after the handshake: kubelets with self-signed certificates are accepted, as upstream
      // without --kubelet-certificate-authority; one issued by the cluster CA must verify against it.
      rejectUnauthorized: false,
    };
  }

  private certificateProblem(socket: TLSSocket): string | undefined {
    if (socket.authorized) return undefined;
    const peer = socket.getPeerX509Certificate();
    if (!peer) return 'the kubelet presented no certificate';
    if (peer.issuer !== this.caCert.subject) return undefined; // self-signed: not ours to verify
    return `the kubelet's certificate names the cluster CA as issuer but does not verify against it: ${String(socket.authorizationError)}`;
  }
}

function unreachable(endpoint: KubeletEndpoint, err: Error): ApiError {
  return new ApiError(
    503,
    'ServiceUnavailable',
    `error dialing backend: the kubelet at ${endpoint.host}:${endpoint.port} is unreachable: ${err.message}`,
  );
}
