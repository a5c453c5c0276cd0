import { defineCapability } from '@nodelet/kernel';
import type { EndpointSlice, Service } from './objects.js';

/**
 * Where Services and EndpointSlices come from. A source calls the handler as an informer calls upstream's
 * event handlers (OnServiceAdd/Update/Delete, OnEndpointSliceAdd/Update/Delete), then `synced` once its
 * initial list of both kinds has been delivered; the proxy writes no rules before that, so a restart
 * never programs a half-listed state.
 *
 * Built in: `FileSource` (YAML files, for standalone use) and `ApiSource` (list + watch on an API server:
 * the embedded control plane or a real cluster), which `apiSourcePlugin` provides as `proxy.source`.
 */
export interface ProxySourceHandler {
  upsertService(svc: Service): void;
  deleteService(svc: Service): void;
  upsertEndpointSlice(slice: EndpointSlice): void;
  deleteEndpointSlice(slice: EndpointSlice): void;
  synced(): void;
  /**
   * This node's topology labels (`topology.kubernetes.io/*`) changed: a source that watches the Node calls
   * it, and the proxy recomputes topology-aware routing. Optional on both sides.
   */
  nodeLabels?(labels: Record<string, string>): void;
}

export interface ProxySource {
  readonly name: string;
  start(handler: ProxySourceHandler): void | Promise<void>;
  stop(): void | Promise<void>;
}

export const ProxySourceCapability = defineCapability<ProxySource>('proxy.source', {
  version: 1,
  description: 'Services and EndpointSlices for the proxy: an API watch, files',
});
