import { accessSync, constants } from 'node:fs';
import { join } from 'node:path';
import { systemEnv } from '@nodelet/proxy';
import { CliError } from './errors.js';

/**
 * Which proxy mode to run, from what was asked and what this host has. Asked for nothing: iptables as
 * root when an `iptables-restore` (legacy or nft) is installed, else nftables when `nft` is, else
 * userspace (which needs no tool and no root) — with the reason, for one log line. Asked for a kernel
 * mode whose tool is missing: an error naming the package that installs it, before anything starts.
 */
export interface ProxyModeChoice {
  mode: string;
  /** Why this mode, when it was not asked for. */
  reason?: string;
}

export interface ProxyModeRequest {
  /** The mode from a flag or the config file; undefined when neither set one. */
  requested: string | undefined;
  /** Where `requested` came from, for messages: `--proxy-mode`, or `<file>: field proxy.mode`. */
  origin: string;
  iptablesBackend: 'auto' | 'nft' | 'legacy';
  isRoot: boolean;
  /** Whether a command is installed (default: found in the system PATH). */
  has?: (command: string) => boolean;
}

const IPTABLES_TOOLS: Record<ProxyModeRequest['iptablesBackend'], string[]> = {
  auto: ['iptables-nft-restore', 'iptables-legacy-restore', 'iptables-restore'],
  nft: ['iptables-nft-restore'],
  legacy: ['iptables-legacy-restore'],
};

/** Whether `command` is an executable in the PATH the proxy runs its tools with. */
export function commandInstalled(command: string): boolean {
  for (const dir of (systemEnv().PATH ?? '').split(':')) {
    if (!dir) continue;
    try {
      accessSync(join(dir, command), constants.X_OK);
      return true;
    } catch {
      // not in this directory
    }
  }
  return false;
}

export function chooseProxyMode(request: ProxyModeRequest): ProxyModeChoice {
  const has = request.has ?? commandInstalled;
  const iptables = IPTABLES_TOOLS[request.iptablesBackend];
  const haveIptables = iptables.some(has);
  const haveNft = has('nft');
  const { requested } = request;
  if (requested === 'iptables' && !haveIptables) {
    throw new CliError(
      `${request.origin} iptables needs ${iptables.join(' or ')}, which this host does not have: install it (apt-get install iptables), or choose nftables or userspace`,
    );
  }
  if (requested === 'nftables' && !haveNft) {
    throw new CliError(
      `${request.origin} nftables needs nft, which this host does not have: install it (apt-get install nftables), or choose iptables or userspace`,
    );
  }
  if (requested !== undefined) return { mode: requested };
  if (!request.isRoot) return { mode: 'userspace', reason: 'not root: iptables and nftables need root' };
  if (haveIptables) return { mode: 'iptables', reason: `root, and ${iptables.find(has)} is installed` };
  if (haveNft) return { mode: 'nftables', reason: 'root, no iptables-restore, and nft is installed' };
  return {
    mode: 'userspace',
    reason:
      'root, but neither iptables-restore nor nft is installed; apt-get install iptables or nftables for a kernel mode',
  };
}
