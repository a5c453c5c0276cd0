/**
 * The elements of one nftables set or map as last written, with the service ports that own each one
 * (two ports of a service share their cluster IP in `cluster-ips`). `replace` computes the adds and
 * deletes that turn what an owner had into what it has now — so a sync writes only changed elements.
 */
export interface Element {
  /** `10.96.0.10 . tcp . 80` */
  key: string;
  /** `goto service-…`; '' for set elements. */
  value: string;
  comment?: string;
}

interface Stored {
  value: string;
  comment?: string;
  owners: Set<string>;
}

export class ElementStore {
  private readonly elements = new Map<string, Stored>();
  private readonly byOwner = new Map<string, Element[]>();

  constructor(
    readonly name: string,
    readonly kind: 'set' | 'map',
  ) {}

  /** Forgets everything (after the container was flushed). */
  clear(): void {
    this.elements.clear();
    this.byOwner.clear();
  }

  get size(): number {
    return this.elements.size;
  }

  /**
   * Sets the elements `owner` wants. Adds rendered elements (`key [comment "…"] [: value]`) to `adds` and
   * keys to `deletes` for the difference; a changed value is a delete and an add.
   */
  replace(owner: string, wanted: readonly Element[], adds: string[], deletes: string[]): void {
    const previous = this.byOwner.get(owner);
    if (!previous && wanted.length === 0) return;
    if (previous) {
      const wantedKeys = new Set(wanted.map((e) => e.key));
      for (const e of previous) {
        if (wantedKeys.has(e.key)) continue;
        const s = this.elements.get(e.key);
        if (!s) continue;
        s.owners.delete(owner);
        if (s.owners.size === 0) {
          this.elements.delete(e.key);
          deletes.push(e.key);
        }
      }
    }
    for (const e of wanted) {
      const s = this.elements.get(e.key);
      if (s && s.value === e.value) {
        s.owners.add(owner);
        continue;
      }
      if (s) deletes.push(e.key);
      this.elements.set(e.key, {
        value: e.value,
        ...(e.comment ? { comment: e.comment } : {}),
        owners: new Set([owner]),
      });
      adds.push(render(e));
    }
    if (wanted.length > 0) this.byOwner.set(owner, wanted as Element[]);
    else this.byOwner.delete(owner);
  }
}

/** `delete element` and `add element` commands for one container, each as one batched command. */
export function elementCommands(
  prefix: string,
  name: string,
  adds: readonly string[],
  deletes: readonly string[],
): string[] {
  const out: string[] = [];
  if (deletes.length) out.push(`delete element ${prefix} ${name} { ${deletes.join(', ')} }`);
  if (adds.length) out.push(`add element ${prefix} ${name} { ${adds.join(', ')} }`);
  return out;
}

function render(e: Element): string {
  const comment = e.comment ? ` comment ${JSON.stringify(e.comment)}` : '';
  return e.value ? `${e.key}${comment} : ${e.value}` : `${e.key}${comment}`;
}
