import { ipToNumber, ipToString, parseCidr, type Cidr } from '../resources/allocators.js';

/** kube-controller-manager's defaults: --cluster-cidr as kubeadm's flannel setup, --node-cidr-mask-size for IPv4. */
export const defaultClusterCidr = '10.244.0.0/16';
export const defaultNodeCidrMaskSize = 24;

/** Upstream's cidrset refuses to cut a cluster CIDR into more than 2^16 node CIDRs. */
const maxSubnetBits = 16;

/**
 * The cluster CIDR cut into equal node CIDRs (upstream's cidrset): which are taken, and the next free one
 * after the last handed out, round-robin, so a released CIDR is not handed out again at once.
 */
export class NodeCidrSet {
  readonly cluster: Cidr;
  private readonly count: number;
  private readonly used = new Set<number>();
  private cursor = 0;

  constructor(
    clusterCidr: string,
    readonly maskSize: number,
  ) {
    this.cluster = parseCidr(clusterCidr, 'cluster CIDR', defaultClusterCidr);
    if (!Number.isInteger(maskSize) || maskSize < this.cluster.bits || maskSize > 30) {
      throw new Error(
        `node CIDR mask size ${maskSize} must be an integer from the cluster CIDR's prefix (/${this.cluster.bits}) to 30`,
      );
    }
    if (maskSize - this.cluster.bits > maxSubnetBits) {
      throw new Error(
        `node CIDR mask size ${maskSize} cuts cluster CIDR ${this.cluster.text} into more than 2^${maxSubnetBits} node CIDRs; use a mask of at most /${this.cluster.bits + maxSubnetBits}`,
      );
    }
    this.count = 2 ** (maskSize - this.cluster.bits);
  }

  get size(): number {
    return this.count;
  }

  get free(): number {
    return this.count - this.used.size;
  }

  /** The next free node CIDR, now taken, or undefined when every one is. */
  allocate(): string | undefined {
    for (let i = 0; i < this.count; i++) {
      const candidate = (this.cursor + i) % this.count;
      if (this.used.has(candidate)) continue;
      this.used.add(candidate);
      this.cursor = (candidate + 1) % this.count;
      return this.text(candidate);
    }
    return undefined;
  }

  /** Marks `cidr` taken (a Node that has it already); false when it is not one of this set's node CIDRs. */
  occupy(cidr: string): boolean {
    const index = this.indexOf(cidr);
    if (index === undefined) return false;
    this.used.add(index);
    return true;
  }

  release(cidr: string): void {
    const index = this.indexOf(cidr);
    if (index !== undefined) this.used.delete(index);
  }

  private text(index: number): string {
    return `${ipToString(this.cluster.base + index * 2 ** (32 - this.maskSize))}/${this.maskSize}`;
  }

  private indexOf(cidr: string): number | undefined {
    const m = /^([\d.]+)\/(\d+)$/.exec(cidr.trim());
    const address = m ? ipToNumber(m[1]!) : undefined;
    if (address === undefined || Number(m![2]) !== this.maskSize) return undefined;
    const offset = address - this.cluster.base;
    const step = 2 ** (32 - this.maskSize);
    if (offset < 0 || offset >= this.cluster.size || offset % step !== 0) return undefined;
    return offset / step;
  }
}
