import { writeFile } from 'node:fs/promises';
import type { Logger } from '@nodelet/kernel';

/** Upstream's default `oomScoreAdj` of the kubelet: the OOM killer takes nearly anything first. */
export const DEFAULT_KUBELET_OOM_SCORE_ADJ = -999;

/**
 * Sets the kubelet's own OOM score adjustment (`oomScoreAdj`), as upstream's kubelet does at start
 * (ApplyOOMScoreAdj on itself). Lowering it needs CAP_SYS_RESOURCE; without it the kernel refuses
 * (EACCES) and, as upstream, the kubelet goes on — saying once why its setting does not hold.
 */
export async function applyOwnOomScoreAdj(
  value: number,
  logger: Logger,
  file = '/proc/self/oom_score_adj',
): Promise<boolean> {
  try {
    await writeFile(file, String(value));
    return true;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    const cause =
      code === 'EACCES' || code === 'EPERM'
        ? `the kernel refused (${code}): lowering it needs CAP_SYS_RESOURCE, which this process does not have`
        : `cannot write ${file} (${code})`;
    logger.once(
      'kubelet:oomScoreAdj',
      'warn',
      `oomScoreAdj: the kubelet's oom_score_adj stays as it was, not ${value}: ${cause}; the kernel's OOM killer may choose the kubelet like any other process. Run it with CAP_SYS_RESOURCE, or set oomScoreAdj: 0 to leave it alone`,
      { oomScoreAdj: value, file },
    );
    return false;
  }
}
