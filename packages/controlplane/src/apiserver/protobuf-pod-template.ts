import type { Fields } from './protobuf.js';

/**
 * The protobuf field numbers (upstream's core/v1 `protobuf` struct tags) of a pod template as kubectl's
 * typed clients send it: `kubectl create deployment|job` fill a few fields from flags, and `kubectl
 * create job --from=cronjob/…` sends the CronJob's whole (defaulted) template — so the common pod and
 * container fields are read, not dropped. Volumes are not: a template with volumes must come as JSON
 * (its volumeMounts then name no volume, and the request fails validation instead of losing them).
 */
export const podTemplateMessages: Record<string, Fields> = {
  PodTemplateSpec: {
    1: ['metadata', { message: 'ObjectMeta' }],
    2: ['spec', { message: 'PodSpec' }],
  },
  PodSpec: {
    2: ['containers', { repeated: { message: 'Container' } }],
    3: ['restartPolicy', 'string'],
    4: ['terminationGracePeriodSeconds', 'int'],
    5: ['activeDeadlineSeconds', 'int'],
    6: ['dnsPolicy', 'string'],
    7: ['nodeSelector', { map: 'string' }],
    8: ['serviceAccountName', 'string'],
    10: ['nodeName', 'string'],
    11: ['hostNetwork', 'bool'],
    15: ['imagePullSecrets', { repeated: { message: 'LocalObjectReference' } }],
    16: ['hostname', 'string'],
    17: ['subdomain', 'string'],
    19: ['schedulerName', 'string'],
    20: ['initContainers', { repeated: { message: 'Container' } }],
    21: ['automountServiceAccountToken', 'bool'],
    22: ['tolerations', { repeated: { message: 'Toleration' } }],
    24: ['priorityClassName', 'string'],
  },
  Container: {
    1: ['name', 'string'],
    2: ['image', 'string'],
    3: ['command', { repeated: 'string' }],
    4: ['args', { repeated: 'string' }],
    5: ['workingDir', 'string'],
    6: ['ports', { repeated: { message: 'ContainerPort' } }],
    7: ['env', { repeated: { message: 'EnvVar' } }],
    8: ['resources', { message: 'ResourceRequirements' }],
    9: ['volumeMounts', { repeated: { message: 'VolumeMount' } }],
    13: ['terminationMessagePath', 'string'],
    14: ['imagePullPolicy', 'string'],
    20: ['terminationMessagePolicy', 'string'],
  },
  ContainerPort: {
    1: ['name', 'string'],
    2: ['hostPort', 'int'],
    3: ['containerPort', 'int'],
    4: ['protocol', 'string'],
  },
  EnvVar: {
    1: ['name', 'string'],
    2: ['value', 'string'],
    3: ['valueFrom', { message: 'EnvVarSource' }],
  },
  EnvVarSource: {
    1: ['fieldRef', { message: 'ObjectFieldSelector' }],
    2: ['resourceFieldRef', { message: 'ResourceFieldSelector' }],
    3: ['configMapKeyRef', { message: 'KeySelector' }],
    4: ['secretKeyRef', { message: 'KeySelector' }],
  },
  ObjectFieldSelector: { 1: ['apiVersion', 'string'], 2: ['fieldPath', 'string'] },
  ResourceFieldSelector: { 1: ['containerName', 'string'], 2: ['resource', 'string'] },
  // ConfigMapKeySelector and SecretKeySelector: an embedded LocalObjectReference, key, optional.
  KeySelector: {
    1: ['', { inline: 'LocalObjectReference' }],
    2: ['key', 'string'],
    3: ['optional', 'bool'],
  },
  LocalObjectReference: { 1: ['name', 'string'] },
  ResourceRequirements: {
    1: ['limits', { map: 'quantity' }],
    2: ['requests', { map: 'quantity' }],
  },
  VolumeMount: {
    1: ['name', 'string'],
    2: ['readOnly', 'bool'],
    3: ['mountPath', 'string'],
    4: ['subPath', 'string'],
  },
  Toleration: {
    1: ['key', 'string'],
    2: ['operator', 'string'],
    3: ['value', 'string'],
    4: ['effect', 'string'],
    5: ['tolerationSeconds', 'int'],
  },
};
