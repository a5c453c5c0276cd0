import {
  backoffDelay,
  type Clock,
  errorMessage,
  type Logger,
  type Loop,
  type LoopOptions,
} from '@nodelet/kernel';
import { isConflict, isNotFound, type KubeApi, type Lease, type Node, rfc3339Micro } from '@nodelet/client';

export const NodeLeaseNamespace = 'kube-node-lease';

export interface NodeLeaseOptions {
  nodeName: string;
  /** `spec.leaseDurationSeconds` (nodeLeaseDurationSeconds, 40). */
  leaseDurationSeconds?: number;
  /** How often the lease is renewed: a quarter of the lease duration (10 s), as upstream. */
  renewIntervalMs?: number;
}

/**
 * The node's heartbeat: a Lease `kube-node-lease/<node>` held by this kubelet, renewed every 10 s
 * (upstream component-helpers lease controller):
 *
 *   ensure: GET; 404 → CREATE ──fail: retry 200 ms doubling to 7 s──┐
 *   renew:  UPDATE renewTime (≤ 5 tries; a 409 re-reads the lease) ──┴─► wait 10 s ─► renew
 *
 * The owner reference to the Node (so deleting the Node deletes its lease) is added as soon as the
 * Node's UID is known.
 */
export class NodeLeaseController {
  private lease?: Lease;
  private node?: Node;
  private loop?: Loop;
  private renewing?: Promise<boolean>;
  readonly leaseDurationSeconds: number;
  readonly renewIntervalMs: number;
  /** Successful renewals (including the creation), for observers and tests. */
  renewals = 0;

  constructor(
    private readonly api: KubeApi,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly options: NodeLeaseOptions,
  ) {
    this.leaseDurationSeconds = options.leaseDurationSeconds ?? 40;
    this.renewIntervalMs = options.renewIntervalMs ?? this.leaseDurationSeconds * 250;
  }

  /** The Node, once registered: its UID goes into the lease's owner reference. */
  setNode(node: Node): void {
    this.node = node;
  }

  private get loopOptions(): LoopOptions {
    return { period: this.renewIntervalMs, backoff: { initialMs: 200, maxMs: 7_000 } };
  }

  start(): void {
    if (this.loop && !this.loop.stopped) return;
    this.loop = this.clock.loop(() => {
      this.renewing = this.sync().finally(() => (this.renewing = undefined));
      return this.renewing;
    }, this.loopOptions);
  }

  stop(): void {
    this.loop?.stop();
  }

  async idle(): Promise<void> {
    await this.renewing;
  }

  private get running(): boolean {
    return !!this.loop && !this.loop.stopped;
  }

  /**
   * One step: make sure the lease exists, else renew it. False when the lease could not be made (the
   * loop backs off: 200 ms doubling to 7 s); a failed renewal waits for the next period.
   */
  async sync(): Promise<boolean> {
    if (!this.running) return true;
    if (this.lease) {
      await this.renew();
      return true;
    }
    try {
      this.lease = await this.ensureLease();
      return true;
    } catch (err) {
      this.logger.error('Failed to ensure node lease exists, will retry', {
        retryAfterMs: backoffDelay(this.loopOptions, (this.loop?.failures ?? 0) + 1),
        err: errorMessage(err),
      });
      return false;
    }
  }

  private async ensureLease(): Promise<Lease> {
    const name = this.options.nodeName;
    try {
      const existing = await this.api.getLease(NodeLeaseNamespace, name);
      // An existing lease (a restarted kubelet) is renewed right away.
      return await this.api.updateLease(this.desired(existing));
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    const created = await this.api.createLease(this.desired(undefined));
    this.renewals++;
    return created;
  }

  private async renew(): Promise<void> {
    for (let attempt = 0; attempt < 5 && this.running; attempt++) {
      try {
        this.lease = await this.api.updateLease(this.desired(this.lease));
        this.renewals++;
        return;
      } catch (err) {
        if (isNotFound(err)) {
          this.lease = undefined; // deleted: created again next step
          return;
        }
        if (isConflict(err)) {
          try {
            this.lease = await this.api.getLease(NodeLeaseNamespace, this.options.nodeName);
          } catch {
            // the next attempt fails the same way, or the renewal period retries
          }
          continue;
        }
        this.logger.error('Failed to update node lease', { err: errorMessage(err) });
        return; // unreachable server: the next period tries again
      }
    }
  }

  /** The lease to write: `base` (or a new one) with our holder, duration, renew time and owner. */
  private desired(base: Lease | undefined): Lease {
    const name = this.options.nodeName;
    const lease: Lease = base
      ? structuredClone(base)
      : {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name, namespace: NodeLeaseNamespace },
        };
    lease.spec = {
      ...lease.spec,
      holderIdentity: name,
      leaseDurationSeconds: this.leaseDurationSeconds,
      renewTime: rfc3339Micro(this.clock.now()) as any,
    };
    const uid = this.node?.metadata?.uid;
    if (uid && !(lease.metadata!.ownerReferences ?? []).some((o) => o.uid === uid)) {
      lease.metadata!.ownerReferences = [{ apiVersion: 'v1', kind: 'Node', name, uid }];
    }
    return lease;
  }
}
