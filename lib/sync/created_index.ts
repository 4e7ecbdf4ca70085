/**
 * Which objects claim to have been created by which SyncConfig, by namespace: the candidates of pruning
 * (lib/sync/prune_decisions.ts). An object claims it with both markers, the owner annotation and the creation record naming
 * the same SyncConfig. The index is a superset, filled as the caches decode objects and never trusted as it is: the
 * caches check every entry when it is used and drop the ones that no longer hold.
 *
 * Every object of a pruning SyncConfig has an entry, so an entry is small: one short string per object,
 * `<SyncConfig number>|<resource number>|<name>` in a set per namespace (the SyncConfig keys and resource keys, a
 * few dozen, are numbered once; only existing pruning SyncConfigs and cached resources are ever indexed).
 */
export interface CreatedEntry {
  cfgKey: string;
  resourceKey: string;
  name: string;
}

const SEP = "|";

/** Strings numbered in the order they first came. */
class Numbering {
  readonly #numbers = new Map<string, number>();
  readonly #names: string[] = [];

  numberOf(name: string): number {
    let n = this.#numbers.get(name);
    if (n === undefined) {
      this.#numbers.set(name, n = this.#names.length);
      this.#names.push(name);
    }
    return n;
  }

  known(name: string): number | undefined {
    return this.#numbers.get(name);
  }

  nameOf(n: number): string {
    return this.#names[n];
  }
}

export class CreatedIndex {
  /** namespace -> entries */
  readonly #byNamespace = new Map<string, Set<string>>();
  readonly #configs = new Numbering();
  readonly #resources = new Numbering();

  add(namespace: string, cfgKey: string, resourceKey: string, name: string): void {
    let entries = this.#byNamespace.get(namespace);
    if (!entries) this.#byNamespace.set(namespace, entries = new Set());
    entries.add(this.#encode(cfgKey, resourceKey, name));
  }

  /** The entries in `namespace`. */
  *in(namespace: string): Generator<CreatedEntry> {
    for (const e of this.#byNamespace.get(namespace) ?? []) yield this.#decode(e);
  }

  /** An entry that no longer holds. */
  drop(namespace: string, entry: CreatedEntry): void {
    const entries = this.#byNamespace.get(namespace);
    if (!entries) return;
    entries.delete(this.#encode(entry.cfgKey, entry.resourceKey, entry.name));
    if (!entries.size) this.#byNamespace.delete(namespace);
  }

  /** The SyncConfigs with entries in `namespace`. */
  creatorsIn(namespace: string): string[] {
    return [...new Set([...this.in(namespace)].map((e) => e.cfgKey))];
  }

  /** The namespaces where `cfgKey` has entries. */
  namespacesOf(cfgKey: string): string[] {
    const n = this.#configs.known(cfgKey);
    if (n === undefined) return [];
    const prefix = `${n}${SEP}`;
    const out: string[] = [];
    for (const [namespace, entries] of this.#byNamespace) {
      for (const e of entries) {
        if (e.startsWith(prefix)) {
          out.push(namespace);
          break;
        }
      }
    }
    return out;
  }

  /** Whether an entry of a SyncConfig for which `counts` holds is of resource `resourceKey`. */
  hasResource(resourceKey: string, counts: (cfgKey: string) => boolean): boolean {
    const r = this.#resources.known(resourceKey);
    if (r === undefined) return false;
    for (const entries of this.#byNamespace.values()) {
      for (const e of entries) {
        const { cfgKey, resourceKey: rk } = this.#decode(e);
        if (rk === resourceKey && counts(cfgKey)) return true;
      }
    }
    return false;
  }

  forgetNamespace(namespace: string): void {
    this.#byNamespace.delete(namespace);
  }

  /** SyncConfig `cfgKey` went, or no longer prunes: its entries go (turning pruning on indexes them again). */
  forgetConfig(cfgKey: string): void {
    const n = this.#configs.known(cfgKey);
    if (n === undefined) return;
    const prefix = `${n}${SEP}`;
    for (const [namespace, entries] of this.#byNamespace) {
      for (const e of entries) if (e.startsWith(prefix)) entries.delete(e);
      if (!entries.size) this.#byNamespace.delete(namespace);
    }
  }

  #encode(cfgKey: string, resourceKey: string, name: string): string {
    // Joined: a concatenation would keep the strings it was made of alive.
    return [this.#configs.numberOf(cfgKey), this.#resources.numberOf(resourceKey), name].join(SEP);
  }

  #decode(e: string): CreatedEntry {
    const a = e.indexOf(SEP);
    const b = e.indexOf(SEP, a + 1);
    return {
      cfgKey: this.#configs.nameOf(Number(e.slice(0, a))),
      resourceKey: this.#resources.nameOf(Number(e.slice(a + 1, b))),
      name: e.slice(b + 1),
    };
  }
}
