import { isObject, type KubeObject } from '../object.js';
import type { ResourceType } from '../apiserver/resource-type.js';
import type { AdmissionPlugin, AdmissionUpdate } from './admission.js';

/**
 * Upstream's DefaultTolerationSeconds admission plugin (plugin/pkg/admission/defaulttolerationseconds):
 * a pod that tolerates neither taint already gets
 *
 *   - key: node.kubernetes.io/not-ready     operator: Exists  effect: NoExecute  tolerationSeconds: 300
 *   - key: node.kubernetes.io/unreachable   operator: Exists  effect: NoExecute  tolerationSeconds: 300
 *
 * so the taint eviction controller deletes it 5 minutes after its node went NotReady or unreachable
 * instead of at once. A toleration with an empty key or effect counts as tolerating the taint. On create
 * and on updates of the pod itself (so a replaced pod keeps them, as tolerations may not be removed).
 */
export const defaultNotReadyTolerationSeconds = 300;
export const defaultUnreachableTolerationSeconds = 300;

export interface DefaultTolerationSecondsOptions {
  /** kube-apiserver's --default-not-ready-toleration-seconds. */
  notReadySeconds?: number;
  /** kube-apiserver's --default-unreachable-toleration-seconds. */
  unreachableSeconds?: number;
}

export class DefaultTolerationSecondsAdmission implements AdmissionPlugin {
  readonly name = 'DefaultTolerationSeconds';
  private readonly defaults: { key: string; seconds: number }[];

  constructor(options: DefaultTolerationSecondsOptions = {}) {
    this.defaults = [
      {
        key: 'node.kubernetes.io/not-ready',
        seconds: options.notReadySeconds ?? defaultNotReadyTolerationSeconds,
      },
      {
        key: 'node.kubernetes.io/unreachable',
        seconds: options.unreachableSeconds ?? defaultUnreachableTolerationSeconds,
      },
    ];
  }

  admitCreate(t: ResourceType, pod: KubeObject): void {
    if (t.storage === 'pods') this.addDefaults(pod);
  }

  admitUpdate(
    t: ResourceType,
    pod: KubeObject,
    _old: KubeObject,
    _ctx: unknown,
    request: AdmissionUpdate,
  ): void {
    if (t.storage === 'pods' && request.subresource === '') this.addDefaults(pod);
  }

  private addDefaults(pod: KubeObject): void {
    if (!isObject(pod.spec)) return;
    const spec = pod.spec as Record<string, any>;
    if (spec.tolerations !== undefined && !Array.isArray(spec.tolerations)) return; // validation names it
    const tolerations: Record<string, any>[] = spec.tolerations ?? [];
    for (const { key, seconds } of this.defaults) {
      const tolerated = tolerations.some(
        (x) => isObject(x) && (!x.key || x.key === key) && (!x.effect || x.effect === 'NoExecute'),
      );
      if (!tolerated)
        tolerations.push({ key, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: seconds });
    }
    spec.tolerations = tolerations;
  }
}
