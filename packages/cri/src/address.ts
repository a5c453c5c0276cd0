/**
 * CRI endpoints: `unix:///run/containerd/containerd.sock` (also accepted: a bare absolute path),
 * or `host:port` for TCP (tests; `127.0.0.1:0` picks a free port).
 */

/** The gRPC target for an endpoint: a bare absolute path becomes `unix://<path>`. */
export function grpcTarget(address: string): string {
  return address.startsWith('/') ? `unix://${address}` : address;
}

/** The socket path of a unix endpoint (`unix:///p`, `unix:/p`, `unix:p` or `/p`); undefined for TCP. */
export function unixSocketPath(address: string): string | undefined {
  if (address.startsWith('/')) return address;
  if (!address.startsWith('unix:')) return undefined;
  const rest = address.slice('unix:'.length);
  return rest.startsWith('//') ? rest.slice(2) : rest;
}

/** Upstream kubelet's limit for CRI messages in both directions (16 MiB; gRPC's default is 4). */
export const CRI_MAX_MESSAGE_BYTES = 16 * 1024 * 1024;
