import { defineCapability } from '@nodelet/kernel';
import type { EndpointSlice, Service } from './objects.js';

/**
 * Where Services and EndpointSlices come from. A source calls the handler as an informer calls upstream's
 * event handlers (OnServiceAdd/Update/Delete, OnEndpointSliceAdd/Update/Delete), then `synced` once its
 * initial list of both kinds has been delivered; the proxy writes no rules before that, so a restart
 * never programs a half-listed state.
 *
 * Built in: `FileSource` (YAML files, for standalone use). The API source (a watch on the API server,
 * the embedded control plane or a real cluster) is a plugin that provides `proxy.source`.
 */
export interface ProxySourceHandler {
  upsertService(svc: Service): void;
  deleteService(svc: Service): void;
  upsertEndpointSlice(slice: EndpointSlice): void;
  deleteEndpointSlice(slice: EndpointSlice): void;
  synced(): void;
}

export interface ProxySource {
  readonly name: string;
  start(handler: ProxySourceHandler): void | Promise<void>;
  stop(): void | Promise<void>;
}

export const ProxySourceCapability = defineCapability<ProxySource>('proxy.source', {
  description: 'Services and EndpointSlices for the proxy: an API watch, files',
});
