import type { Pod, Secret } from '@nodelet/api';
import { errorMessage, type Logger } from '@nodelet/kernel';
import type { PodObjects } from '@nodelet/volume';
import { dockerConfigOfSecret } from './docker-config.js';
import { DockerKeyring } from './keyring.js';

export interface PodPullSecrets {
  /** The Secrets read, in the order of `spec.imagePullSecrets`. */
  secrets: Secret[];
  /** Names of those that could not be read (missing, forbidden, no API server). */
  failed: string[];
}

/**
 * The Secrets of the pod's `spec.imagePullSecrets` (upstream getPullSecretsForPod; the control plane
 * has already added the ServiceAccount's). One that cannot be read is logged and named in `failed`, and
 * the pull goes on without it; entries without a name are skipped, as upstream does.
 */
export async function getPullSecrets(
  pod: Pod,
  objects: PodObjects | undefined,
  logger: Logger,
): Promise<PodPullSecrets> {
  const namespace = pod.metadata?.namespace ?? 'default';
  const names = (pod.spec?.imagePullSecrets ?? []).flatMap((ref) => (ref.name ? [ref.name] : []));
  const read = await Promise.all(
    names.map((name) =>
      objects
        ? objects.getSecret(namespace, name).catch((err: unknown) => errorMessage(err))
        : 'no API server connection to read Secrets from',
    ),
  );
  const result: PodPullSecrets = { secrets: [], failed: [] };
  read.forEach((secret, i) => {
    if (typeof secret !== 'string') return void result.secrets.push(secret);
    logger.info('Unable to retrieve pull secret, the image pull may not succeed.', {
      pod: `${namespace}/${pod.metadata?.name}`,
      secret: `${namespace}/${names[i]}`,
      err: secret,
    });
    result.failed.push(names[i]!);
  });
  return result;
}

/** The keyring of these Secrets' registry credentials; PullSecretError when one cannot be parsed. */
export function keyringOfSecrets(secrets: Secret[], logger?: Logger): DockerKeyring {
  const keyring = new DockerKeyring(logger);
  for (const secret of secrets) {
    const config = dockerConfigOfSecret(secret);
    if (config) keyring.add(config);
  }
  return keyring;
}
