/**
 * The resolv.conf file format, both ways: reading the node's file as upstream's kubelet does
 * (parseResolvConf in pkg/kubelet/network/dns) and writing a pod's file as containerd writes it from
 * the sandbox's CRI DNSConfig (`search`, one `nameserver` line per server, `options`).
 */

/** A pod's resolver configuration: CRI's DNSConfig. */
export interface DnsConfig {
  servers: string[];
  searches: string[];
  options: string[];
}

/** Upstream reads at most this much of the file (10 MiB). */
export const MAX_RESOLV_CONF_BYTES = 10 * 1024 * 1024;

/**
 * Parses resolv.conf text. `nameserver` lines accumulate; the last `search` and the last `options`
 * line win; comments start with `#` (upstream does not treat `;` as a comment). A search domain loses
 * its trailing dot, so `example.com.` and `example.com` count once against the limits. A
 * `nameserver` line without an address is an error, as upstream.
 */
export function parseResolvConf(text: string): DnsConfig {
  const out: DnsConfig = { servers: [], searches: [], options: [] };
  const errors: string[] = [];
  for (const line of text.split('\n')) {
    const trimmed = line.trim();
    if (trimmed.startsWith('#')) continue;
    const fields = trimmed.split(/\s+/).filter((f) => f !== '');
    if (fields.length === 0) continue;
    switch (fields[0]) {
      case 'nameserver':
        if (fields.length >= 2) out.servers.push(fields[1]!);
        else errors.push('nameserver list is empty ');
        break;
      case 'search':
        out.searches = fields.slice(1).map((s) => (s.endsWith('.') ? s.slice(0, -1) : s));
        break;
      case 'options':
        out.options = fields.slice(1);
        break;
    }
  }
  // Go's aggregate error: one message as is, several in brackets.
  if (errors.length === 1) throw new Error(errors[0]);
  if (errors.length > 1) throw new Error(`[${errors.join(', ')}]`);
  return out;
}

/**
 * The pod's /etc/resolv.conf as containerd's CRI plugin writes it for a DNSConfig. An empty config
 * gives '' — the runtime then copies the node's own file.
 */
export function formatResolvConf(config: DnsConfig): string {
  let text = '';
  if (config.searches.length > 0) text += `search ${config.searches.join(' ')}\n`;
  if (config.servers.length > 0) text += `nameserver ${config.servers.join('\nnameserver ')}\n`;
  if (config.options.length > 0) text += `options ${config.options.join(' ')}\n`;
  return text;
}
