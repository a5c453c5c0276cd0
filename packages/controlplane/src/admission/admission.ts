import type { KubeObject } from '../object.js';
import type { RequestUser, ResourceType, StrategyContext } from '../apiserver/resource-type.js';

/**
 * An admission plugin (upstream's admission.MutationInterface + ValidationInterface): it sees an object
 * after decoding and defaulting, before validation and storage, and may change it or refuse it by
 * throwing an ApiError. The registry runs the plugins in their order, on create, and — for plugins that
 * care — on update (of the object or a subresource, with the stored object beside it) and delete.
 */
export interface AdmissionPlugin {
  readonly name: string;
  admitCreate(t: ResourceType, obj: KubeObject, ctx: StrategyContext, request: AdmissionRequest): void;
  admitUpdate?(
    t: ResourceType,
    obj: KubeObject,
    old: KubeObject,
    ctx: StrategyContext,
    request: AdmissionUpdate,
  ): void;
  admitDelete?(t: ResourceType, old: KubeObject, request: AdmissionRequest): void;
}

/** An update's request: which subresource it writes ('' for the object itself). */
export interface AdmissionUpdate extends AdmissionRequest {
  subresource: string;
}

export interface AdmissionRequest {
  user?: RequestUser | undefined;
  dryRun: boolean;
  /**
   * The name refusals quote: the object's name as sent, or its `generateName` when the server is to
   * make one up (upstream's admission runs before the name is generated).
   */
  name: string;
}

export const mirrorPodAnnotation = 'kubernetes.io/config.mirror';

export function isMirrorPod(pod: KubeObject): boolean {
  return Object.hasOwn(pod.metadata.annotations ?? {}, mirrorPodAnnotation);
}
