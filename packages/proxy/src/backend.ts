import { defineCapability } from '@nodelet/kernel';
import type { ChangeSet, ProxyState, SyncResult } from './state.js';

/**
 * The `proxy.backend` capability: what programs the node (or carries the traffic) from the proxy's state.
 * One backend per proxy; configuration chooses it (`proxy.mode`). Built in: iptables, nftables, ipvs,
 * userspace. A Windows HNS backend (`proxy-kernelspace`) would fill the same slot.
 *
 * `sync` is called with the whole desired state each time, plus what changed since the last successful
 * sync; `full` asks the backend to rewrite everything it owns (at start, after an error, and
 * periodically). A partial sync must touch only what `changes` names. A sync that throws leaves the
 * previous rules in force (backends apply atomically); the proxy retries with `full` set.
 */
export interface ProxyBackend {
  readonly name: string;
  sync(state: ProxyState, changes: ChangeSet, full: boolean): Promise<SyncResult>;
  /** Removes every rule, chain, table, set and listener this backend ever made. Safe to call when none exist. */
  cleanup(): Promise<void>;
  /**
   * Called when the proxy starts, before its first sync (and after a `stop`, to start again): start what
   * the syncs will use, such as a standby shell for the kernel tool. Failures surface in the sync.
   */
  prepare?(): Promise<void>;
  /** Stops what the backend runs in-process (listeners, standby shells); kernel rules stay in force. */
  stop?(): Promise<void>;
}

export const ProxyBackendCapability = defineCapability<ProxyBackend>('proxy.backend', {
  version: 1,
  description: 'programs Services into the node: iptables, nftables, ipvs, userspace',
});
