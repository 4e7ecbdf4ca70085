/**
 * The index namespace -> SyncConfigs that select it. Selection (label selector, then RE2 name patterns) is
 * computed once per namespace version and SyncConfig generation, not once per namespace per pass: a pass over 1000
 * namespaces with 5 SyncConfigs would otherwise run 5000 selector evaluations to find the same answer.
 *
 * An entry is valid while the namespace's cached object is the same object (the namespace cache replaces it on
 * every change) and no SyncConfig was recompiled since (`epoch`).
 */
import type { NamespaceFacts } from "./selector.ts";
import type { CompiledSyncConfig } from "./syncconfig.ts";
import { ValuePool } from "./value_pool.ts";

export class SelectionIndex<N extends NamespaceFacts & { phase: string }> {
  readonly #entries = new Map<string, { ns: N; epoch: number; keys: readonly string[] }>();
  /** Thousands of namespaces are selected by the same few lists of SyncConfigs: one (frozen) copy of each. */
  #lists = new ValuePool<string[]>();
  #epoch = 0;

  /** A SyncConfig was compiled anew or removed: every entry is stale. */
  invalidate(): void {
    this.#epoch++;
    this.#lists = new ValuePool<string[]>();
  }

  forget(namespace: string): void {
    this.#entries.delete(namespace);
  }

  /** Keys of the valid SyncConfigs (from `configs`) that select the active namespace `ns`, in `configs` order. */
  selecting(ns: N, configs: () => Iterable<CompiledSyncConfig>): readonly string[] {
    const entry = this.#entries.get(ns.name);
    if (entry && entry.ns === ns && entry.epoch === this.#epoch) return entry.keys;
    const keys: string[] = [];
    if (ns.phase === "Active") { for (const cfg of configs()) if (cfg.selector.selects(ns)) keys.push(cfg.key); }
    const shared = this.#lists.shared(keys.join("\n"), keys);
    this.#entries.set(ns.name, { ns, epoch: this.#epoch, keys: shared });
    return shared;
  }

  get size(): number {
    return this.#entries.size;
  }
}
