/**
 * Which objects claim to have been created by which SyncConfig, by namespace: the candidates of pruning
 * (lib/sync/prune.ts). An object claims it with both markers, the owner annotation and the creation record naming
 * the same SyncConfig. The index is a superset, filled as the caches decode objects and never trusted as it is: the
 * caches check every entry when it is used and drop the ones that no longer hold.
 */
export class CreatedIndex {
  /** namespace -> SyncConfig key -> `resourceKey|namespace/name` */
  readonly #byNamespace = new Map<string, Map<string, Set<string>>>();

  add(namespace: string, cfgKey: string, entry: string): void {
    let byConfig = this.#byNamespace.get(namespace);
    if (!byConfig) this.#byNamespace.set(namespace, byConfig = new Map());
    let entries = byConfig.get(cfgKey);
    if (!entries) byConfig.set(cfgKey, entries = new Set());
    entries.add(entry);
  }

  /** The entries in `namespace`, by SyncConfig key; `drop` removes one that no longer holds. */
  *in(namespace: string): Generator<[cfgKey: string, entries: Set<string>]> {
    const byConfig = this.#byNamespace.get(namespace);
    if (!byConfig) return;
    for (const [cfgKey, entries] of byConfig) {
      yield [cfgKey, entries];
      if (!entries.size) byConfig.delete(cfgKey);
    }
    if (!byConfig.size) this.#byNamespace.delete(namespace);
  }

  /** The SyncConfigs with entries in `namespace`. */
  creatorsIn(namespace: string): string[] {
    return [...this.#byNamespace.get(namespace)?.keys() ?? []];
  }

  /** The namespaces where `cfgKey` has entries. */
  namespacesOf(cfgKey: string): string[] {
    const out: string[] = [];
    for (const [namespace, byConfig] of this.#byNamespace) if (byConfig.get(cfgKey)?.size) out.push(namespace);
    return out;
  }

  /** Whether an entry of a SyncConfig for which `counts` holds is of resource `resourceKey`. */
  hasResource(resourceKey: string, counts: (cfgKey: string) => boolean): boolean {
    for (const byConfig of this.#byNamespace.values()) {
      for (const [cfgKey, entries] of byConfig) {
        if (!counts(cfgKey)) continue;
        for (const e of entries) if (e.startsWith(`${resourceKey}|`)) return true;
      }
    }
    return false;
  }

  forgetNamespace(namespace: string): void {
    this.#byNamespace.delete(namespace);
  }
}
