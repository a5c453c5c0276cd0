import { ConfigSourceAnnotation, type Pod } from '@nodelet/api';
import { rfc3339 } from './pod-status.js';

/**
 * The pod manager (upstream pkg/kubelet/pod): which pods the kubelet should run, as its sources last
 * said, and which it is still terminating after a source removed them. A pod is in one of:
 *
 *   (new) ──(admitted)──► desired ──(source removed it)──► terminating ──(terminated)──► forgotten
 *     │                     └──(deleted in the API, then terminated)──► finished (never run again)
 *     └──(rejected by admission)──► rejected (never run; listed as Failed until its source removes it)
 *
 * Static pods (file and URL sources) have a mirror pod in the API server when the node is joined to
 * one; `mirrorPodOf`/`staticPodOf` map one to the other by full name (`namespace/name`).
 */
/**
 * Told of each new version of a desired pod and of a pod no longer desired (upstream: the pod manager
 * registers pods with the secret and configmap managers), so the objects pods reference are watched
 * while they do.
 */
export interface PodRegistry {
  registerPod(pod: Pod): void;
  unregisterPod(pod: Pod): void;
}

export class PodManager {
  /** Desired pods by UID. */
  private readonly desired = new Map<string, Pod>();
  /** Pods being terminated: still reported until they are gone. */
  private readonly terminating = new Map<string, Pod>();
  /** When each pod in `terminating` was removed by its source: its deletion time in `/pods`. */
  private readonly removedAt = new Map<string, number>();
  /** Pods done with for good (rejected by admission, or deleted in the API and terminated). */
  private readonly finished = new Set<string>();
  /** Pods admission rejected, listed (Failed) until their source removes them. */
  private readonly rejected = new Map<string, Pod>();
  private mirrorPods: () => ReadonlyMap<string, Pod> = () => new Map();
  private registry?: PodRegistry;

  /** Where desired pods are registered (the kubelet's API objects). */
  setRegistry(registry: PodRegistry): void {
    this.registry = registry;
  }

  get(uid: string): Pod | undefined {
    return this.desired.get(uid);
  }

  has(uid: string): boolean {
    return this.desired.has(uid);
  }

  /** A source's newest version of a desired pod. */
  set(pod: Pod): void {
    this.desired.set(pod.metadata!.uid!, pod);
    this.registry?.registerPod(pod);
  }

  isFinished(uid: string): boolean {
    return this.finished.has(uid);
  }

  /** A pod admission rejected: never to run, listed until its source removes it. */
  reject(pod: Pod): void {
    const uid = pod.metadata!.uid!;
    this.finished.add(uid);
    this.rejected.set(uid, pod);
  }

  /**
   * A source removed the pod: it is no longer desired. Returns the version the kubelet ran and whether it
   * had been finished (then there is nothing to terminate unless a worker still runs it).
   */
  remove(pod: Pod): { pod: Pod; wasFinished: boolean } {
    const uid = pod.metadata!.uid!;
    const known = this.desired.get(uid) ?? pod;
    if (this.desired.delete(uid)) this.registry?.unregisterPod(known);
    this.rejected.delete(uid);
    return { pod: known, wasFinished: this.finished.delete(uid) };
  }

  /** The pod is being terminated since `at` (kept once set: a second removal does not move it). */
  markTerminating(pod: Pod, at: number): void {
    const uid = pod.metadata!.uid!;
    this.terminating.set(uid, pod);
    if (!this.removedAt.has(uid)) this.removedAt.set(uid, at);
  }

  /** The pod's worker terminated it and cleaned up. */
  terminated(uid: string): void {
    // A pod deleted in the API stays there until the kubelet's final delete: it must not start again.
    const deleted = this.desired.get(uid);
    if (deleted?.metadata?.deletionTimestamp) {
      this.desired.delete(uid);
      this.registry?.unregisterPod(deleted);
      this.finished.add(uid);
    }
    this.terminating.delete(uid);
    this.removedAt.delete(uid);
  }

  desiredPods(): Pod[] {
    return [...this.desired.values()];
  }

  /**
   * Desired, terminating and rejected pods by UID, as `/pods` lists them (a removed pod with its
   * deletion time).
   */
  listed(): [string, Pod][] {
    const out: [string, Pod][] = [];
    for (const [uid, pod] of [...this.desired, ...this.terminating, ...this.rejected])
      out.push([uid, this.withDeletion(uid, pod)]);
    return out;
  }

  /** A listed pod by namespace and name. */
  find(namespace: string, name: string): Pod | undefined {
    for (const [, pod] of this.listed()) {
      if (pod.metadata?.name === name && (pod.metadata?.namespace ?? 'default') === namespace) return pod;
    }
    return undefined;
  }

  /** Where mirror pods are known (the API source's mirror pods by full name). */
  setMirrorPods(mirrorPods: () => ReadonlyMap<string, Pod>): void {
    this.mirrorPods = mirrorPods;
  }

  /** The mirror pod of a static pod, when the API server has one. */
  mirrorPodOf(staticPod: Pod): Pod | undefined {
    return isStaticPod(staticPod) ? this.mirrorPods().get(fullName(staticPod)) : undefined;
  }

  /** The static pod a mirror pod mirrors, when the kubelet runs it. */
  staticPodOf(mirror: Pod): Pod | undefined {
    const name = fullName(mirror);
    return this.desiredPods().find((p) => isStaticPod(p) && fullName(p) === name);
  }

  /**
   * A pod its source removed (a static manifest deleted) is being deleted as an API pod is: it is listed
   * with the deletionTimestamp and grace of its kill, so it prints `Terminating` (as upstream's mirror
   * pod does), not the `Running` it was or the `Error` its SIGTERM exit (143) reads as.
   */
  private withDeletion(uid: string, pod: Pod): Pod {
    const at = this.removedAt.get(uid);
    if (at === undefined || pod.metadata?.deletionTimestamp) return pod;
    const grace = pod.spec?.terminationGracePeriodSeconds ?? 30;
    return {
      ...pod,
      metadata: { ...pod.metadata, deletionTimestamp: rfc3339(at), deletionGracePeriodSeconds: grace },
    };
  }
}

/** A pod of the file or URL source (the node's own), not of the API server. */
export function isStaticPod(pod: Pod): boolean {
  const source = pod.metadata?.annotations?.[ConfigSourceAnnotation];
  return source !== undefined && source !== 'api';
}

const fullName = (pod: Pod) => `${pod.metadata?.namespace ?? 'default'}/${pod.metadata?.name}`;
