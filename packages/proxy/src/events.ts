/**
 * The proxy's facts on the kernel's bus (see the kernel's EventCatalogue). Observers and backends that
 * react to them import @nodelet/proxy, which brings these declarations into their program.
 */
declare module '@nodelet/kernel' {
  interface EventCatalogue {
    '[Proxy] Service Changed': { namespace: string; name: string };
    '[Proxy] Endpoints Changed': { namespace: string; name: string };
    '[Proxy] Rules Synced': { backend: string; durationMs: number; full: boolean };
  }
}

export {};
