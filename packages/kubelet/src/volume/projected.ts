import type { Pod, TokenRequestSpec, Volume } from '@nodelet/api';
import type { FileProjection, VolumeMountContext, VolumePlugin } from '@nodelet/volume';
import { aggregate, downwardApiPayload } from './downward-api-volume.js';
import { checkMode, checkPath, defaultFileMode, keyPayload, readKeyedObject } from './key-payload.js';
import type { Mounter } from './mounter.js';
import { VolumeError } from './volume-error.js';
import { prepareVolumeDir, writeVolumeFiles } from './written-volume.js';

type Projection = NonNullable<NonNullable<Volume['projected']>['sources']>[number];

/** What upstream's ServiceAccountToken projection defaults `expirationSeconds` to. */
const defaultTokenExpirationSeconds = 3600;
const supported = ['configMap', 'secret', 'downwardAPI', 'serviceAccountToken'];

/**
 * projected (upstream pkg/volume/projected): one directory of files from several sources — configMap,
 * secret, downwardAPI and serviceAccountToken (a token of the pod's service account for the
 * `audience`, bound to the pod, from `PodObjects`, written at `path`), in memory (a tmpfs) where the
 * kubelet can mount one, refreshed on every sync so a renewed token reaches the file. This is the
 * `kube-api-access-*` volume a real API server gives every pod. clusterTrustBundle and podCertificate
 * sources are refused by name. Every source is tried; their errors are reported together.
 */
export class ProjectedPlugin implements VolumePlugin {
  readonly name = 'kubernetes.io/projected';
  readonly source = 'projected';
  readonly refresh = true;
  readonly readOnly = true;
  private readonly canChown: boolean;

  constructor(
    private readonly mounter: Mounter,
    /** Whether files may be given to another user (the kubelet runs as root); default: so. */
    options: { canChown?: boolean } = {},
  ) {
    this.canChown = options.canChown ?? process.getuid?.() === 0;
  }

  async setUp(ctx: VolumeMountContext): Promise<string> {
    const source = ctx.volume.projected!;
    const defaultMode = source.defaultMode ?? defaultFileMode;
    checkMode(defaultMode, 'projected.defaultMode');
    const parts = await Promise.all(
      (source.sources ?? []).map((projection, i) =>
        this.collect(ctx, projection, defaultMode, `projected.sources[${i}]`).then(
          (files) => ({ files }),
          (err: Error) => ({ error: err.message }),
        ),
      ),
    );
    const errors = parts.flatMap((p) => ('error' in p ? [p.error] : []));
    if (errors.length > 0) throw new VolumeError(aggregate(errors));
    const payload = new Map<string, FileProjection>();
    for (const p of parts) if ('files' in p) for (const [k, v] of p.files) payload.set(k, v);
    await prepareVolumeDir(ctx, true, this.mounter);
    await writeVolumeFiles(ctx, payload);
    return ctx.dir;
  }

  private async collect(
    ctx: VolumeMountContext,
    projection: Projection,
    defaultMode: number,
    field: string,
  ): Promise<Map<string, FileProjection>> {
    const { configMap, secret, downwardAPI, serviceAccountToken: token } = projection;
    if (configMap || secret) {
      const kind = configMap ? 'configmap' : 'secret';
      const ref = (configMap ?? secret)!;
      const name = ref.name ?? '';
      const optional = !!ref.optional;
      const data = await readKeyedObject(ctx, kind, name, optional);
      const at = `${field}.${configMap ? 'configMap' : 'secret'}`;
      return keyPayload({ kind, name, items: ref.items, optional, defaultMode, field: at }, data);
    }
    if (downwardAPI) {
      return downwardApiPayload(
        downwardAPI.items ?? [],
        ctx.pod,
        ctx.facts,
        defaultMode,
        `${field}.downwardAPI`,
      );
    }
    if (token) {
      checkPath(token.path, `${field}.serviceAccountToken.path`);
      const fsUser = this.canChown ? fsUserOf(ctx.pod) : undefined;
      // With an fsGroup, the volume's ownership makes it 0640.
      const mode = fsUserOf(ctx.pod) !== undefined || ctx.fsGroup !== undefined ? 0o600 : defaultMode;
      const status = await ctx.objects.getServiceAccountToken(ctx.pod, tokenRequestSpec(ctx.pod, token));
      const file: FileProjection = { data: status.token, mode, ...(fsUser !== undefined ? { fsUser } : {}) };
      return new Map([[token.path, file]]);
    }
    const other = Object.keys(projection).find((k) => (projection as Record<string, unknown>)[k] != null);
    throw new VolumeError(
      other
        ? `${field}: ${other} is not supported by nodelet (supported: ${supported.join(', ')})`
        : `${field}: must specify one of ${supported.join(', ')}`,
    );
  }
}

/**
 * The user every container of the pod runs as, when they all name the same one (upstream FsUserFrom):
 * the projected token then belongs to it, mode 0600.
 */
export function fsUserOf(pod: Pod): number | undefined {
  const spec = pod.spec;
  const containers = [
    ...(spec?.initContainers ?? []),
    ...(spec?.containers ?? []),
    ...(spec?.ephemeralContainers ?? []),
  ];
  let user: number | undefined;
  for (const c of containers) {
    const runAs = c.securityContext?.runAsUser ?? spec?.securityContext?.runAsUser;
    if (runAs === undefined || (user !== undefined && user !== runAs)) return undefined;
    user = runAs;
  }
  return user;
}

/** The TokenRequest a projected serviceAccountToken source makes: its audience and lifetime, bound to the pod. */
export function tokenRequestSpec(
  pod: Pod,
  token: { audience?: string; expirationSeconds?: number },
): TokenRequestSpec {
  const meta = pod.metadata!;
  return {
    audiences: token.audience ? [token.audience] : [],
    expirationSeconds: token.expirationSeconds ?? defaultTokenExpirationSeconds,
    boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: meta.name, uid: meta.uid },
  };
}
