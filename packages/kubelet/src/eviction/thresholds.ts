import { quantityValue } from '@nodelet/api';
import { DEFAULT_EVICTION_HARD, EVICTION_SIGNALS, type EvictionThreshold } from '../cm/node-allocatable.js';

/**
 * Eviction thresholds as upstream's evictionapi.Threshold (pkg/kubelet/eviction/api): a signal, a value
 * (a quantity or a fraction of the capacity), the grace period a soft threshold must be met for before
 * pods are evicted (0: hard), and the minimum reclaim beyond the threshold once it is met.
 */
export interface Threshold {
  signal: string;
  /** The `LessThan` operator is the only one upstream has: met while available < value. */
  value: ThresholdValue;
  /** 0 for a hard threshold. */
  gracePeriodMs: number;
  minReclaim?: ThresholdValue;
}

/** A quantity (bytes, inodes or pids) or a fraction of the capacity (float32 as upstream keeps it). */
export type ThresholdValue = Pick<EvictionThreshold, 'quantity' | 'percentage'> & {
  /** The quantity as written (`500Mi`), which messages show as upstream does. */
  text?: string;
};

/** The eviction manager's configuration (upstream eviction.Config). */
export interface EvictionConfig {
  thresholds: Threshold[];
  /** How long a pressure condition stays after its threshold is no longer met (5 min). */
  pressureTransitionPeriodMs: number;
  /** The longest grace period a soft eviction gives a pod (`evictionMaxPodGracePeriod`, default 0). */
  maxPodGracePeriodSeconds: number;
}

/** The KubeletConfiguration fields the thresholds come from, as written in the file. */
export interface EvictionSettings {
  evictionHard?: Record<string, string>;
  evictionSoft?: Record<string, string>;
  evictionSoftGracePeriod?: Record<string, number>;
  evictionMinimumReclaim?: Record<string, string>;
  evictionMaxPodGracePeriod?: number;
  evictionPressureTransitionPeriodMs?: number;
}

export const DEFAULT_PRESSURE_TRANSITION_PERIOD_MS = 5 * 60_000;

function checkSignal(signal: string, field: string): void {
  if (!EVICTION_SIGNALS.includes(signal)) {
    throw new Error(
      `field "${field}": unknown eviction signal "${signal}" (known: ${EVICTION_SIGNALS.join(', ')})`,
    );
  }
}

/**
 * One `signal: value` statement (upstream parseThresholdStatement). `0%` and `100%` set no threshold, as
 * upstream; a quantity must be above zero.
 */
export function parseThresholdValue(
  signal: string,
  value: string,
  field: string,
): ThresholdValue | undefined {
  checkSignal(signal, field);
  const text = value.trim();
  const percent = /^(-?\d+(?:\.\d+)?)%$/.exec(text);
  if (percent) {
    if (text === '0%' || text === '100%') return undefined;
    const p = Number(percent[1]);
    if (p < 0)
      throw new Error(
        `field "${field}.${signal}": eviction percentage threshold must be >= 0%, got ${value}`,
      );
    if (p > 100)
      throw new Error(
        `field "${field}.${signal}": eviction percentage threshold must be <= 100%, got ${value}`,
      );
    return { percentage: Math.fround(p / 100) };
  }
  let quantity: number;
  try {
    quantity = quantityValue(text);
  } catch {
    throw new Error(`field "${field}.${signal}": "${value}" is neither a quantity nor a percentage`);
  }
  if (!(quantity > 0))
    throw new Error(`field "${field}.${signal}": eviction threshold must be positive, got ${value}`);
  return { quantity, text };
}

/** `evictionMinimumReclaim` (upstream parseMinimumReclaims): a non-negative quantity or a percentage. */
function parseMinimumReclaim(signal: string, value: string, field: string): ThresholdValue {
  checkSignal(signal, field);
  const percent = /^(-?\d+(?:\.\d+)?)%$/.exec(value.trim());
  if (percent) {
    const p = Number(percent[1]);
    if (!(p > 0))
      throw new Error(
        `field "${field}.${signal}": eviction percentage minimum reclaim must be positive, got ${value}`,
      );
    if (p > 100)
      throw new Error(
        `field "${field}.${signal}": eviction percentage minimum reclaim must be <= 100%, got ${value}`,
      );
    return { percentage: Math.fround(p / 100) };
  }
  let quantity: number;
  try {
    quantity = quantityValue(value.trim());
  } catch {
    throw new Error(`field "${field}.${signal}": "${value}" is neither a quantity nor a percentage`);
  }
  if (quantity < 0) throw new Error(`field "${field}.${signal}": negative eviction minimum reclaim ${value}`);
  return { quantity };
}

function statements(map: Record<string, string>, field: string): Threshold[] {
  const out: Threshold[] = [];
  for (const [signal, value] of Object.entries(map)) {
    const parsed = parseThresholdValue(signal, value, field);
    if (parsed) out.push({ signal, value: parsed, gracePeriodMs: 0 });
  }
  return out;
}

/**
 * The thresholds of a configuration (upstream ParseThresholdConfig): the hard ones (upstream's defaults
 * when `evictionHard` is not set), the soft ones each with its grace period, the minimum reclaims.
 */
export function evictionConfig(settings: EvictionSettings = {}): EvictionConfig {
  const hard = statements(settings.evictionHard ?? DEFAULT_EVICTION_HARD, 'evictionHard');
  const soft = statements(settings.evictionSoft ?? {}, 'evictionSoft');
  const grace = settings.evictionSoftGracePeriod ?? {};
  for (const signal of Object.keys(grace)) checkSignal(signal, 'evictionSoftGracePeriod');
  for (const t of soft) {
    const ms = grace[t.signal];
    if (ms === undefined) {
      throw new Error(
        `field "evictionSoftGracePeriod": grace period must be specified for the soft eviction threshold ${t.signal}`,
      );
    }
    t.gracePeriodMs = ms;
  }
  const thresholds = [...hard, ...soft];
  for (const [signal, value] of Object.entries(settings.evictionMinimumReclaim ?? {})) {
    const minReclaim = parseMinimumReclaim(signal, value, 'evictionMinimumReclaim');
    for (const t of thresholds) if (t.signal === signal) t.minReclaim = minReclaim;
  }
  return {
    thresholds,
    pressureTransitionPeriodMs:
      settings.evictionPressureTransitionPeriodMs ?? DEFAULT_PRESSURE_TRANSITION_PERIOD_MS,
    maxPodGracePeriodSeconds: settings.evictionMaxPodGracePeriod ?? 0,
  };
}

export const isHardThreshold = (t: Threshold): boolean => t.gracePeriodMs === 0;

/** The value as an amount of a capacity (upstream GetThresholdQuantity: a percentage truncates). */
export function thresholdQuantity(value: ThresholdValue, capacity: number): number {
  if (value.quantity !== undefined) return value.quantity;
  return Math.trunc(capacity * (value.percentage ?? 0));
}
