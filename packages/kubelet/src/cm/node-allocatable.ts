import { milliCpu, quantityValue } from '@nodelet/api';

/**
 * Node allocatable (upstream pkg/kubelet/cm, GetNodeAllocatableReservation and the node status setter):
 * what pods may use is the capacity less `systemReserved`, `kubeReserved` and the hard eviction
 * thresholds of the resources they protect — `memory.available` for memory, `nodefs.available` for
 * ephemeral-storage — each never below zero.
 */

/** A hard eviction threshold: a quantity (bytes) or a fraction of the capacity. */
export interface EvictionThreshold {
  signal: string;
  quantity?: number;
  /** As upstream keeps it: a float32 (`10%` → 0.100000001…). */
  percentage?: number;
}

export interface ReservationConfig {
  systemReserved?: Record<string, string>;
  kubeReserved?: Record<string, string>;
  /** Absent: upstream's defaults (`DEFAULT_EVICTION_HARD`); given, they replace them, as upstream. */
  evictionHard?: readonly EvictionThreshold[];
}

/** Upstream's default `evictionHard` on Linux. */
export const DEFAULT_EVICTION_HARD: Record<string, string> = {
  'memory.available': '100Mi',
  'nodefs.available': '10%',
  'nodefs.inodesFree': '5%',
  'imagefs.available': '15%',
  'imagefs.inodesFree': '5%',
};

/** The eviction signals the kubelet knows (upstream's evictionapi signals). */
export const EVICTION_SIGNALS = [
  'memory.available',
  'nodefs.available',
  'nodefs.inodesFree',
  'imagefs.available',
  'imagefs.inodesFree',
  'containerfs.available',
  'containerfs.inodesFree',
  'pid.available',
];

/** Which resource a signal's hard threshold is reserved from. */
const reservedFrom: Record<string, string> = {
  'memory.available': 'memory',
  'nodefs.available': 'ephemeral-storage',
};

/** `evictionHard` as the KubeletConfiguration has it (`memory.available: 100Mi`, `nodefs.available: 10%`). */
export function parseEvictionThresholds(map: Record<string, string>, field: string): EvictionThreshold[] {
  return Object.entries(map).map(([signal, value]) => {
    if (!EVICTION_SIGNALS.includes(signal)) {
      throw new Error(
        `field "${field}": unknown eviction signal "${signal}" (known: ${EVICTION_SIGNALS.join(', ')})`,
      );
    }
    const percent = /^(\d+(?:\.\d+)?)%$/.exec(value.trim());
    if (percent) {
      const p = Number(percent[1]);
      if (p > 100) throw new Error(`field "${field}.${signal}": ${value} is more than 100%`);
      return { signal, percentage: Math.fround(p / 100) };
    }
    try {
      return { signal, quantity: quantityValue(value) };
    } catch {
      throw new Error(`field "${field}.${signal}": "${value}" is neither a quantity nor a percentage`);
    }
  });
}

/** Amounts in the unit each resource is compared in: millicores for cpu, bytes or counts otherwise. */
function amount(resource: string, q: string): number {
  return resource === 'cpu' ? milliCpu(q) : quantityValue(q);
}

/** What is held back from pods, by resource (upstream GetNodeAllocatableReservation). */
export function allocatableReservation(
  capacity: Record<string, string>,
  config: ReservationConfig,
): Map<string, number> {
  const reserved = new Map<string, number>();
  for (const resource of Object.keys(capacity)) {
    let value = 0;
    for (const list of [config.systemReserved, config.kubeReserved]) {
      const q = list?.[resource];
      if (q !== undefined) value += amount(resource, q);
    }
    for (const t of config.evictionHard ?? defaultThresholds()) {
      if (reservedFrom[t.signal] !== resource) continue;
      value += t.quantity ?? Math.trunc((t.percentage ?? 0) * amount(resource, capacity[resource]!));
    }
    if (value !== 0) reserved.set(resource, value);
  }
  return reserved;
}

/**
 * Refuses a configuration that reserves more than the node has (upstream validateNodeAllocatable):
 * the kubelet does not start with it.
 */
export function validateNodeAllocatable(capacity: Record<string, string>, config: ReservationConfig): void {
  for (const [resource, reserved] of allocatableReservation(capacity, config)) {
    const have = amount(resource, capacity[resource]!);
    if (have < reserved) {
      throw new Error(
        `invalid Node Allocatable configuration. Resource "${resource}" has a reservation of ${format(resource, reserved)} but capacity of ${capacity[resource]}. Expected capacity >= reservation.`,
      );
    }
  }
}

/** Capacity less the reservation, never below zero, in the quantity form upstream shows. */
export function nodeAllocatable(
  capacity: Record<string, string>,
  config: ReservationConfig,
): Record<string, string> {
  const reserved = allocatableReservation(capacity, config);
  const out: Record<string, string> = {};
  for (const [resource, q] of Object.entries(capacity)) {
    const r = reserved.get(resource);
    out[resource] = r === undefined ? q : format(resource, Math.max(0, amount(resource, q) - r));
  }
  return out;
}

/** cpu as cores or millicores; bytes in Ki when whole, else plain; counts plain. */
function format(resource: string, value: number): string {
  if (resource === 'cpu') return value % 1000 === 0 ? String(value / 1000) : `${value}m`;
  if (
    (resource === 'memory' || resource === 'ephemeral-storage' || resource.startsWith('hugepages-')) &&
    value % 1024 === 0
  )
    return `${value / 1024}Ki`;
  return String(value);
}

let defaults: EvictionThreshold[] | undefined;
const defaultThresholds = () => (defaults ??= parseEvictionThresholds(DEFAULT_EVICTION_HARD, 'evictionHard'));
