import { defineCapability } from '@nodelet/kernel';
import type { PodNetworkStatus } from './result.js';

/** A host port forwarded to the pod (`containers[].ports[].hostPort`), in Kubernetes spelling. */
export interface PortMapping {
  readonly hostPort: number;
  readonly containerPort: number;
  /** Default `TCP`. Providers pass it to CNI lower-cased, as containerd and CRI-O do. */
  readonly protocol?: 'TCP' | 'UDP' | 'SCTP';
  /** Host address to bind; empty or absent means every address. */
  readonly hostIP?: string;
}

/**
 * One pod's attachment to the node's network. The same request is passed to `setUpPod`, `checkPod` and
 * `tearDownPod` (the CNI spec wants the attachment parameters unchanged between ADD, CHECK and DEL).
 */
export interface PodNetworkRequest {
  readonly podUid: string;
  readonly podName: string;
  readonly namespace: string;
  /**
   * The sandbox id (CNI_CONTAINERID): starts with a letter or digit, then letters, digits, `_`, `.`, `-`.
   * Together with `ifName` it names the attachment.
   */
  readonly containerId: string;
  /**
   * Path of the pod's network namespace (e.g. `/var/run/netns/cni-…` or `/proc/<pid>/ns/net`). Required
   * for set-up and check; for tear-down it may be empty or already gone — addresses are still released.
   */
  readonly netnsPath: string;
  /** Interface created inside the pod. Default `eth0`. */
  readonly ifName?: string;
  /** Host ports; passed to plugins that declare the `portMappings` capability. */
  readonly portMappings?: readonly PortMapping[];
  /**
   * Further capability arguments by name (`bandwidth`, `ipRanges`, `dns`, `mac`, …, per the CNI
   * conventions); each goes only to plugins whose configuration declares that capability.
   */
  readonly capabilityArgs?: Readonly<Record<string, unknown>>;
}

/** Whether pods can be networked now; feeds the node's `NetworkReady` runtime condition. */
export interface NetworkStatus {
  readonly ready: boolean;
  /** What is used when ready; what is wrong and where to fix it when not. */
  readonly message: string;
}

/**
 * The `cni.network` capability: sets up and tears down pod networks through CNI. Used by runtimes that
 * need the kubelet to network their sandboxes (the fake runtime's real-network mode, third-party
 * runtimes); with containerd and CRI-O the runtime runs CNI itself (see the package README).
 *
 * Calls for the same `containerId` are serialised by the provider; different pods run in parallel.
 * Errors are `CniError`s (a `NodeletError`): `Unavailable` — no network configuration or a plugin binary
 * missing, try later; `FailedPrecondition` — the configuration is broken; `InvalidInput` — a bad request;
 * `AlreadyExists` — the attachment is set up already; `NotFound` — `checkPod` of an attachment never set up;
 * `DeadlineExceeded` — a plugin ran past its timeout; `Internal` — a plugin failed.
 */
export interface CniNetwork {
  /**
   * CNI ADD through every plugin of the network, in order. On failure the attachment is deleted again
   * (best effort) before the error is thrown, so a retry starts clean.
   */
  setUpPod(req: PodNetworkRequest): Promise<PodNetworkStatus>;
  /**
   * CNI DEL through every plugin, in reverse, with the result of the ADD. Idempotent: tearing down what
   * is not set up (or was torn down already) succeeds.
   */
  tearDownPod(req: PodNetworkRequest): Promise<void>;
  /** CNI CHECK: resolves when every plugin agrees the attachment is as ADD left it. */
  checkPod(req: PodNetworkRequest): Promise<void>;
  status(): Promise<NetworkStatus>;
}

export const CniNetwork = defineCapability<CniNetwork>('cni.network', {
  version: 1,
  description: 'pod network set-up and tear-down through CNI plugins',
});
