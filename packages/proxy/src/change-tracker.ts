// The one module of @nodelet/api the proxy needs, not its entry (every schema and printer of the API).
import { formatFieldError } from '@nodelet/api/field-error';
import type { EventBus, Logger } from '@nodelet/kernel';
import { endpointPortKey, mergeSlices } from './endpoints.js';
import { jsonEqual, jsonFingerprint } from './json-equal.js';
import { type EndpointSlice, namespacedName, type Service, sliceServiceName } from './objects.js';
import { type ServicePortInfo, servicePortsOf } from './service-port.js';
import type { ChangeSet, NodeContext, ProxyState, ServicePortState } from './state.js';
import { categorizeEndpoints } from './topology.js';
import { isProxiedService, validateEndpointSlice, validateService } from './validation.js';

interface TrackedService {
  ports: ServicePortInfo[];
}

interface TrackedSlice {
  slice: EndpointSlice;
  service: string;
  /** `jsonFingerprint` of what rules are made from (service, address type, endpoints, ports). */
  content: string;
}

/**
 * Services and EndpointSlices in, the proxy's desired state out (upstream's ServiceChangeTracker,
 * EndpointsChangeTracker and EndpointSliceCache in one). Updates only mark a Service dirty; `commit`
 * recomputes the dirty ones and reports which service ports really changed, so a sync of one endpoint
 * change costs one service, not all of them.
 *
 * An invalid object (a port out of range, an address that is not an IP) is refused with one log line
 * naming the object and every bad field; the last valid version of that object stays in the state, so
 * the rules made from it stay in force. The same invalid content is reported once.
 */
export class ChangeTracker {
  private readonly services = new Map<string, TrackedService>();
  private readonly slices = new Map<string, TrackedSlice>();
  private readonly slicesByService = new Map<string, Map<string, EndpointSlice>>();
  private readonly rejected = new Map<string, string>();
  private readonly dirty = new Set<string>();
  private readonly current = new Map<string, ServicePortState>();
  private readonly portsByService = new Map<string, string[]>();

  constructor(
    private node: NodeContext,
    private readonly logger: Logger,
    private readonly bus?: EventBus,
  ) {}

  get nodeContext(): NodeContext {
    return this.node;
  }

  /** Changes what rules depend on about the node (labels, IPs): every service is recomputed. */
  setNode(node: NodeContext): void {
    this.node = node;
    for (const key of this.services.keys()) this.dirty.add(key);
    for (const key of this.slicesByService.keys()) this.dirty.add(key);
  }

  /** Whether a commit would have anything to recompute. */
  get pending(): boolean {
    return this.dirty.size > 0;
  }

  /** Adds or updates a Service; returns whether it changed anything. */
  upsertService(svc: Service): boolean {
    const key = namespacedName(svc.metadata);
    const errors = validateService(svc);
    if (errors.length > 0) {
      this.reject(`Service ${key}`, JSON.stringify(svc), errors.map(formatFieldError));
      return false;
    }
    this.rejected.delete(`Service ${key}`);
    let ports: ServicePortInfo[] = [];
    if (isProxiedService(svc)) {
      ports = servicePortsOf(svc);
      if (ports.length === 0 && (svc.spec?.ports ?? []).length > 0) {
        this.logger.once(`proxy-ipv6:${key}`, 'info', 'skipping Service: its cluster IP is not IPv4', {
          service: key,
          clusterIP: svc.spec?.clusterIP,
        });
      }
    }
    const prev = this.services.get(key);
    if (prev && jsonEqual(prev.ports, ports)) return false;
    this.services.set(key, { ports });
    this.markDirty(key, 'service');
    return true;
  }

  deleteService(svc: Service): boolean {
    const key = namespacedName(svc.metadata);
    this.rejected.delete(`Service ${key}`);
    if (!this.services.delete(key)) return false;
    this.markDirty(key, 'service');
    return true;
  }

  /** Adds or updates an EndpointSlice; returns whether it changed anything. */
  upsertEndpointSlice(slice: EndpointSlice): boolean {
    const key = namespacedName(slice.metadata);
    const errors = validateEndpointSlice(slice);
    if (errors.length > 0) {
      this.reject(`EndpointSlice ${key}`, JSON.stringify(slice), errors.map(formatFieldError));
      return false;
    }
    this.rejected.delete(`EndpointSlice ${key}`);
    const service = sliceServiceName(slice)!;
    const content = jsonFingerprint([service, slice.addressType, slice.endpoints ?? [], slice.ports ?? []]);
    const prev = this.slices.get(key);
    if (prev && prev.content === content) return false;
    if (prev && prev.service !== service) this.removeSlice(key, prev);
    this.slices.set(key, { slice, service, content });
    let set = this.slicesByService.get(service);
    if (!set) this.slicesByService.set(service, (set = new Map()));
    set.set(key, slice);
    this.markDirty(service, 'endpoints');
    return true;
  }

  deleteEndpointSlice(slice: EndpointSlice): boolean {
    const key = namespacedName(slice.metadata);
    this.rejected.delete(`EndpointSlice ${key}`);
    const prev = this.slices.get(key);
    if (!prev) return false;
    this.removeSlice(key, prev);
    return true;
  }

  /**
   * Recomputes the dirty services and returns the state with what changed since the last commit. The
   * returned state is live (later commits update it); backends must not keep it across syncs.
   */
  commit(): { state: ProxyState; changes: ChangeSet } {
    const services = new Set<string>();
    const updated = new Set<string>();
    const removed = new Set<string>();
    for (const key of this.dirty) {
      const tracked = this.services.get(key);
      const endpoints = mergeSlices(this.slicesByService.get(key)?.values() ?? [], this.node.nodeName);
      const names: string[] = [];
      for (const info of tracked?.ports ?? []) {
        const eps = endpoints.get(endpointPortKey(info.portName, info.protocol)) ?? [];
        const cat = categorizeEndpoints(eps, info, this.node.topologyLabels);
        const state: ServicePortState = { ...info, endpoints: eps, ...cat };
        names.push(info.name);
        // `current` holds states this tracker made, so comparing with them is safe.
        if (!jsonEqual(this.current.get(info.name), state)) {
          this.current.set(info.name, state);
          updated.add(info.name);
          services.add(key);
        }
      }
      for (const old of this.portsByService.get(key) ?? []) {
        if (!names.includes(old)) {
          this.current.delete(old);
          removed.add(old);
          services.add(key);
        }
      }
      if (names.length > 0) this.portsByService.set(key, names);
      else this.portsByService.delete(key);
    }
    this.dirty.clear();
    return {
      state: { node: this.node, servicePorts: this.current },
      changes: { services, updated, removed },
    };
  }

  /** The state as of the last commit. */
  snapshot(): ProxyState {
    return { node: this.node, servicePorts: this.current };
  }

  private removeSlice(key: string, prev: TrackedSlice): void {
    this.slices.delete(key);
    const set = this.slicesByService.get(prev.service);
    set?.delete(key);
    if (set && set.size === 0) this.slicesByService.delete(prev.service);
    this.markDirty(prev.service, 'endpoints');
  }

  private markDirty(service: string, what: 'service' | 'endpoints'): void {
    this.dirty.add(service);
    if (this.bus) {
      const [namespace = '', name = ''] = service.split('/');
      this.bus.emit(what === 'service' ? '[Proxy] Service Changed' : '[Proxy] Endpoints Changed', {
        namespace,
        name,
      });
    }
  }

  private reject(what: string, content: string, problems: string[]): void {
    if (this.rejected.get(what) === content) return;
    this.rejected.set(what, content);
    const kept = what.startsWith('Service')
      ? this.services.has(what.slice('Service '.length))
      : this.slices.has(what.slice('EndpointSlice '.length));
    this.logger.error(
      `ignoring invalid ${what}: ${problems.join('; ')}; ${kept ? 'its last valid version stays in force' : 'no rules are made from it'}`,
    );
  }
}
