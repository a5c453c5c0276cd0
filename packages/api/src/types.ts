import type * as k8s from '@kubernetes/client-node';
import type { Wire } from './wire.js';

export type ObjectMeta = Wire<k8s.V1ObjectMeta>;
export type Pod = Wire<k8s.V1Pod>;
export type PodSpec = Wire<k8s.V1PodSpec>;
export type PodStatus = Wire<k8s.V1PodStatus>;
export type PodCondition = Wire<k8s.V1PodCondition>;
export type Container = Wire<k8s.V1Container>;
export type ContainerPort = Wire<k8s.V1ContainerPort>;
export type ContainerStatus = Wire<k8s.V1ContainerStatus>;
export type ContainerState = Wire<k8s.V1ContainerState>;
export type EnvVar = Wire<k8s.V1EnvVar>;
export type Volume = Wire<k8s.V1Volume>;
export type VolumeMount = Wire<k8s.V1VolumeMount>;
export type Probe = Wire<k8s.V1Probe>;
export type ResourceRequirements = Wire<k8s.V1ResourceRequirements>;
export type PodList = Wire<k8s.V1PodList>;
export type OwnerReference = Wire<k8s.V1OwnerReference>;

export type PodPhase = 'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Unknown';
export type RestartPolicy = 'Always' | 'OnFailure' | 'Never';
export type PullPolicy = 'Always' | 'IfNotPresent' | 'Never';
