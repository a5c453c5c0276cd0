/**
 * The event catalogue: every fact that travels on the bus, by name. The kernel defines only the
 * mechanism; each domain declares its own events next to their producers, by declaration merging:
 *
 *     declare module '@nodelet/kernel' {
 *       interface EventCatalogue { '[MyPlugin] Thing Happened': { thing: string } }
 *     }
 *
 * Names say source and fact, as `[PLEG] Container Died`. Events carry facts, never commands: producers
 * do not know who listens. A plugin that emits or subscribes to a domain's event imports the package
 * that declares it.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- filled by declaration merging
export interface EventCatalogue {}

export type EventType = keyof EventCatalogue;

/** An event as it travels on the bus: its type, the time it was emitted, and its payload. */
export type NodeletEvent<K extends EventType = EventType> = {
  [P in K]: { readonly type: P; readonly at: number } & EventCatalogue[P];
}[K];
