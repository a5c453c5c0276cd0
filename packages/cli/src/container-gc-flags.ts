import { parseGoDuration } from '@nodelet/api';
import { intFlag } from './args.js';
import { CliError } from './errors.js';

/**
 * The flags of `nodelet kubelet` that say how many dead containers it keeps, spelled as upstream's
 * (`--minimum-container-ttl-duration`, `--maximum-dead-containers-per-container`,
 * `--maximum-dead-containers`); their values become the kubelet's `containerGC` policy.
 */
export const containerGCOptions = {
  'minimum-container-ttl-duration': { type: 'string' },
  'maximum-dead-containers-per-container': { type: 'string' },
  'maximum-dead-containers': { type: 'string' },
} as const;

export const containerGCHelp = `Dead containers (collected every minute):
  --minimum-container-ttl-duration DURATION
                                 a finished container is kept at least this long (default 0)
  --maximum-dead-containers-per-container N
                                 dead containers kept per container of a pod; negative: no limit
                                 (default 1)
  --maximum-dead-containers N    dead containers kept on the node, spread evenly over the pods;
                                 negative: no limit (default -1)
`;

export interface ContainerGCFlags {
  minAgeMs?: number;
  maxPerPodContainer?: number;
  maxContainers?: number;
}

type Values = { [K in keyof typeof containerGCOptions]?: string };

const INT32 = [-(2 ** 31), 2 ** 31 - 1] as const;

export function parseContainerGCFlags(values: Values): ContainerGCFlags {
  const out: ContainerGCFlags = {};
  const ttl = values['minimum-container-ttl-duration'];
  if (ttl !== undefined) {
    const ms = parseGoDuration(ttl.trim());
    if (ms === undefined || ms < 0) {
      throw new CliError(
        `flag --minimum-container-ttl-duration must be a duration of 0 or more such as 0, 30s or 1m, got ${JSON.stringify(ttl)}`,
      );
    }
    out.minAgeMs = ms;
  }
  const perContainer = intFlag(
    'maximum-dead-containers-per-container',
    values['maximum-dead-containers-per-container'],
    ...INT32,
  );
  if (perContainer !== undefined) out.maxPerPodContainer = perContainer;
  const total = intFlag('maximum-dead-containers', values['maximum-dead-containers'], ...INT32);
  if (total !== undefined) out.maxContainers = total;
  return out;
}
