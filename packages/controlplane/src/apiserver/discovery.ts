import { apiVersionOf, type ResourceType } from './resource-type.js';

/**
 * Discovery documents, in both forms clients use: the legacy per-group-version documents (`/api`,
 * `/apis`, `/api/v1`, `/apis/<group>/<version>`) and the aggregated one (apidiscovery.k8s.io/v2
 * APIGroupDiscoveryList at `/api` and `/apis`, when the Accept header asks for it), built from the same
 * resource table so they can never disagree.
 */
export const aggregatedDiscoveryType = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';

interface GroupVersion {
  group: string;
  version: string;
  types: ResourceType[];
}

function groupVersions(types: readonly ResourceType[]): GroupVersion[] {
  const out: GroupVersion[] = [];
  for (const t of types) {
    let gv = out.find((g) => g.group === t.group && g.version === t.version);
    if (!gv) out.push((gv = { group: t.group, version: t.version, types: [] }));
    gv.types.push(t);
  }
  return out;
}

export function apiVersions(serverAddress: string): object {
  return {
    kind: 'APIVersions',
    versions: ['v1'],
    serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }],
  };
}

function groupEntry(gv: GroupVersion): object {
  const version = { groupVersion: `${gv.group}/${gv.version}`, version: gv.version };
  return { name: gv.group, versions: [version], preferredVersion: version };
}

export function apiGroupList(types: readonly ResourceType[]): object {
  return {
    kind: 'APIGroupList',
    apiVersion: 'v1',
    groups: groupVersions(types)
      .filter((gv) => gv.group !== '')
      .map(groupEntry),
  };
}

export function apiGroup(types: readonly ResourceType[], group: string): object | undefined {
  const gv = groupVersions(types).find((g) => g.group === group && group !== '');
  return gv ? { kind: 'APIGroup', apiVersion: 'v1', ...groupEntry(gv) } : undefined;
}

export function apiResourceList(
  types: readonly ResourceType[],
  group: string,
  version: string,
): object | undefined {
  const gv = groupVersions(types).find((g) => g.group === group && g.version === version);
  if (!gv) return undefined;
  const resources: object[] = [];
  for (const t of gv.types) {
    resources.push({
      name: t.plural,
      singularName: t.singular,
      namespaced: t.namespaced,
      kind: t.kind,
      verbs: [...t.verbs],
      ...(t.shortNames.length ? { shortNames: [...t.shortNames] } : {}),
      ...(t.categories.length ? { categories: [...t.categories] } : {}),
    });
    for (const sub of t.subresources) {
      resources.push({
        name: `${t.plural}/${sub.name}`,
        singularName: '',
        namespaced: t.namespaced,
        ...(sub.group !== undefined ? { group: sub.group, version: sub.version } : {}),
        kind: sub.kind,
        verbs: [...sub.verbs],
      });
    }
  }
  return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: apiVersionOf(gv), resources };
}

/** The aggregated discovery document of the legacy group (`/api`) or of the named groups (`/apis`). */
export function aggregatedDiscovery(types: readonly ResourceType[], legacy: boolean): object {
  const items = groupVersions(types)
    .filter((gv) => (gv.group === '') === legacy)
    .map((gv) => ({
      metadata: { name: gv.group, creationTimestamp: null },
      versions: [
        {
          version: gv.version,
          resources: gv.types.map((t) => ({
            resource: t.plural,
            responseKind: { group: t.group, version: t.version, kind: t.kind },
            scope: t.namespaced ? 'Namespaced' : 'Cluster',
            singularResource: t.singular,
            verbs: [...t.verbs],
            ...(t.shortNames.length ? { shortNames: [...t.shortNames] } : {}),
            ...(t.categories.length ? { categories: [...t.categories] } : {}),
            ...(t.subresources.length
              ? {
                  subresources: t.subresources.map((s) => ({
                    subresource: s.name,
                    responseKind: {
                      group: s.group ?? t.group,
                      version: s.version ?? t.version,
                      kind: s.kind,
                    },
                    verbs: [...s.verbs],
                  })),
                }
              : {}),
          })),
          freshness: 'Current',
        },
      ],
    }));
  return { kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, items };
}

/** Whether an Accept header asks for aggregated discovery v2. */
export function wantsAggregated(accept: string | undefined): boolean {
  if (!accept) return false;
  return accept
    .split(',')
    .map((part) => part.replace(/\s+/g, ''))
    .some(
      (part) =>
        part.includes('g=apidiscovery.k8s.io') &&
        part.includes('v=v2') &&
        part.includes('as=APIGroupDiscoveryList'),
    );
}
