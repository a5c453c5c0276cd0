import {
  canonicalJson,
  ConfigMirrorAnnotation,
  ConfigSeenAnnotation,
  ConfigSourceAnnotation,
  localConfigAnnotations,
  type Pod,
} from '@nodelet/api';
import type { Clock, EventBus, Logger } from '@nodelet/kernel';
import type { PodSourceName } from '../events.js';
import type { Subscription } from 'rxjs';
import type { PodSource } from './source.js';
import { readinessGateView } from '../readiness-gates.js';

export interface PodConfigOptions {
  bus: EventBus;
  logger: Logger;
  /**
   * Time of `kubernetes.io/config.seen` for pods that arrive without one (API pods). Without a clock such
   * pods get no seen annotation; static pods carry theirs from the source.
   */
  clock?: Clock;
}

/** A pod as PodConfig holds it: accepted from a source, with where it came from. */
interface Held {
  source: PodSourceName;
  origin: string;
  pod: Pod;
}

interface NameHolder {
  source: PodSourceName;
  origin: string;
  /** The pod that took the name in the current pass. */
  uid?: string;
}

interface SourceState {
  /** The last snapshot, before conflicts were resolved. */
  candidates: Pod[];
  originOf: (pod: Pod) => string;
  seen: boolean;
  /** Accepted pods by UID. */
  accepted: Map<string, Held>;
  subscription?: Subscription;
  /** Set when PodConfig started the source (`attach`) and so stops it. */
  owned?: PodSource;
}

/**
 * Merges the pod sources into one desired set (upstream's PodConfig/podStorage). Each source sends
 * snapshots; for each, PodConfig emits on the bus, per pod, `[Source] Pod Removed`, `[Source] Pod Added`
 * and `[Source] Pod Updated` (same UID, meaningfully different content: spec, labels, annotations other
 * than the kubelet's own `config.*` ones, deletion fields).
 *
 * A pod's full name (`namespace/name`) belongs to one pod. A pod whose name is already held — by another
 * file, or by another source — is ignored with one log line and a `[Source] Manifest Rejected` event; the
 * holder keeps it until it goes away, and then the ignored pod is admitted. (Upstream checks names only
 * within one source; across sources it lets both in. Mirror pods — the API server's copies of static pods,
 * which share their names by design — are exempt.)
 *
 * Pods are stored as copies carrying `kubernetes.io/config.source`, and `kubernetes.io/config.seen` from
 * the first time PodConfig saw them (kept across updates). Treat emitted pods as read-only.
 */
export class PodConfig {
  private readonly sources = new Map<PodSourceName, SourceState>();
  /** Full name → the file (or URL) whose pod holds it. */
  private holders = new Map<string, NameHolder>();
  /** `source/uid/origin` → why that pod is being ignored, so each rejection is reported once. */
  private readonly rejected = new Map<string, string>();

  constructor(private readonly options: PodConfigOptions) {}

  /** Registers a source and follows its snapshots. Starting and stopping the source is the caller's. */
  addSource(source: PodSource): void {
    const state = this.state(source.name, (pod) => source.originOf(pod));
    state.subscription?.unsubscribe();
    state.subscription = source.snapshots$.subscribe((pods) => this.apply(source.name, pods));
  }

  /** `addSource`, then starts the source; `stop()` stops it again. */
  attach(source: PodSource): void {
    this.addSource(source);
    this.state(source.name).owned = source;
    source.start();
  }

  /**
   * Registers a source by name without subscribing, for sources that call `apply` themselves (the API
   * source). Until it sends its first snapshot, `seenAllSources()` is false.
   */
  register(name: PodSourceName, originOf: (pod: Pod) => string = () => name): void {
    this.state(name, originOf);
  }

  /** Stops following every source, and stops the sources it started (`attach`). */
  stop(): void {
    for (const state of this.sources.values()) {
      state.owned?.stop();
      state.owned = undefined;
      state.subscription?.unsubscribe();
      state.subscription = undefined;
    }
  }

  /** True once every registered source has sent at least one snapshot (upstream `SeenAllSources`). */
  seenAllSources(): boolean {
    return this.sources.size > 0 && [...this.sources.values()].every((s) => s.seen);
  }

  /** The current desired pods of every source, sources in registration order. */
  pods(): Pod[] {
    return [...this.sources.values()].flatMap((s) => [...s.accepted.values()].map((h) => h.pod));
  }

  /** Pods of one source. */
  podsOf(source: PodSourceName): Pod[] {
    return [...(this.sources.get(source)?.accepted.values() ?? [])].map((h) => h.pod);
  }

  /** Where a current pod was read (a file, a URL, `api`). */
  originOf(uid: string): string | undefined {
    for (const s of this.sources.values()) {
      const held = s.accepted.get(uid);
      if (held) return held.origin;
    }
    return undefined;
  }

  /**
   * Takes a source's full snapshot: the step function behind `addSource`, callable directly (tests, the
   * API source). Names are settled over all sources, since a name released by one source may admit a pod
   * another source was refused.
   */
  apply(sourceName: PodSourceName, snapshot: readonly Pod[]): void {
    const state = this.state(sourceName);
    state.candidates = [...snapshot];
    state.seen = true;

    // A name stays with the file (or URL) that holds it, even when that file's content, and so its pods'
    // UIDs, change. Names nobody holds go to newcomers in order: sources in registration order, pods in
    // snapshot order (files sorted by path).
    // (Each source's candidates are indexed once — full name → origins — so this is O(pods), not
    // O(holders × pods): at 10,000 static pods a scan per holder blocked the event loop for seconds.)
    const namesBySource = new Map<PodSourceName, Map<string, Set<string>>>();
    const originsOf = (source: PodSourceName, name: string): Set<string> | undefined => {
      let names = namesBySource.get(source);
      if (!names) {
        names = new Map();
        const s = this.sources.get(source);
        for (const p of s?.candidates ?? []) {
          const n = fullName(p);
          let origins = names.get(n);
          if (!origins) names.set(n, (origins = new Set()));
          origins.add(s!.originOf(p));
        }
        namesBySource.set(source, names);
      }
      return names.get(name);
    };
    const holders = new Map<string, NameHolder>();
    for (const [name, holder] of this.holders) {
      if (originsOf(holder.source, name)?.has(holder.origin)) {
        holders.set(name, { source: holder.source, origin: holder.origin });
      }
    }

    const stillRejected = new Set<string>();
    for (const [name, s] of this.sources) {
      const next = new Map<string, Held>();
      for (const pod of s.candidates) {
        const uid = uidOf(pod);
        const origin = s.originOf(pod);
        const podName = fullName(pod);
        let reason: string | undefined;
        if (!uid) {
          reason = `pod ${JSON.stringify(podName)} has no UID; ignoring ${origin}`;
        } else if (next.has(uid)) {
          reason = `duplicate pod UID ${uid}: already defined by ${next.get(uid)!.origin}; ignoring ${origin}`;
        } else if (!isMirror(pod)) {
          const holder = holders.get(podName);
          if (!holder) {
            holders.set(podName, { source: name, origin, uid });
          } else if (holder.source === name && holder.origin === origin && holder.uid === undefined) {
            holder.uid = uid;
          } else if (holder.source !== name || holder.uid !== uid) {
            reason = `duplicate pod name ${JSON.stringify(podName)}: already defined by ${holder.origin}; ignoring ${origin}`;
          }
        }
        if (reason) {
          const key = `${name}/${uid}/${origin}`;
          stillRejected.add(key);
          if (this.rejected.get(key) !== reason) {
            this.rejected.set(key, reason);
            this.options.logger.warn(reason, { source: name, origin });
            this.options.bus.emit('[Source] Manifest Rejected', { source: name, origin, reason });
          }
          continue;
        }
        next.set(uid, { source: name, origin, pod });
      }
      this.commit(name, s, next);
    }
    for (const key of this.rejected.keys()) if (!stillRejected.has(key)) this.rejected.delete(key);
    this.holders = holders;
  }

  private state(name: PodSourceName, originOf?: (pod: Pod) => string): SourceState {
    let state = this.sources.get(name);
    if (!state) {
      state = { candidates: [], originOf: originOf ?? (() => name), seen: false, accepted: new Map() };
      this.sources.set(name, state);
    } else if (originOf) {
      state.originOf = originOf;
    }
    return state;
  }

  /** Replaces a source's accepted set and emits what changed: removals, then additions, then updates. */
  private commit(source: PodSourceName, state: SourceState, next: Map<string, Held>): void {
    const { bus, clock } = this.options;
    const removed: Pod[] = [];
    const added: Pod[] = [];
    const updated: Pod[] = [];
    const accepted = new Map<string, Held>();
    for (const [uid, held] of next) {
      const existing = state.accepted.get(uid);
      if (existing && !differsSemantically(existing.pod, held.pod)) {
        accepted.set(uid, { ...existing, origin: held.origin });
        continue;
      }
      const pod = structuredClone(held.pod);
      const annotations = { ...pod.metadata!.annotations };
      annotations[ConfigSourceAnnotation] = source;
      const seen =
        existing?.pod.metadata?.annotations?.[ConfigSeenAnnotation] ??
        annotations[ConfigSeenAnnotation] ??
        (clock ? new Date(clock.now()).toISOString() : undefined);
      if (seen !== undefined) annotations[ConfigSeenAnnotation] = seen;
      pod.metadata!.annotations = annotations;
      accepted.set(uid, { source, origin: held.origin, pod });
      (existing ? updated : added).push(pod);
    }
    for (const [uid, held] of state.accepted) if (!next.has(uid)) removed.push(held.pod);
    state.accepted = accepted;

    for (const pod of removed) bus.emit('[Source] Pod Removed', { source, pod });
    for (const pod of added) bus.emit('[Source] Pod Added', { source, pod });
    for (const pod of updated) bus.emit('[Source] Pod Updated', { source, pod });
  }
}

function uidOf(pod: Pod): string {
  return pod.metadata?.uid ?? '';
}

/** `namespace/name`, upstream's pod full name key. */
export function fullName(pod: Pod): string {
  return `${pod.metadata?.namespace || 'default'}/${pod.metadata?.name ?? ''}`;
}

function isMirror(pod: Pod): boolean {
  return pod.metadata?.annotations?.[ConfigMirrorAnnotation] !== undefined;
}

/**
 * What upstream compares to decide that a pod of the same UID changed — and the conditions of its
 * readiness gates, which upstream reconciles with a sync of its own.
 */
function differsSemantically(existing: Pod, candidate: Pod): boolean {
  const view = (p: Pod) => {
    const annotations = { ...p.metadata?.annotations };
    for (const k of localConfigAnnotations) delete annotations[k];
    return canonicalJson({
      spec: p.spec,
      labels: p.metadata?.labels ?? {},
      annotations,
      deletionTimestamp: p.metadata?.deletionTimestamp,
      deletionGracePeriodSeconds: p.metadata?.deletionGracePeriodSeconds,
      readinessGates: readinessGateView(p),
    });
  };
  return view(existing) !== view(candidate);
}
