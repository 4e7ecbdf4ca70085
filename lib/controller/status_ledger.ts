/**
 * The counts behind each SyncConfig's status: the outcome of its latest sync in each namespace, for the valid
 * SyncConfigs only (an Invalid one has no counts), and their sum per SyncConfig; the controller says what changed.
 */
import type { ItemCounts } from "../model/status.ts";
import { deepEqual } from "../kube/objects.ts";
import { ValuePool } from "../model/value_pool.ts";

/**
 * Outcomes without failures are shared: at 5,000 namespaces and 5 SyncConfigs almost all 25,000 outcomes are one of a
 * few (every item synced), and an object each would be the ledger's largest cost.
 */
const clean = new ValuePool<ItemCounts>();

/** One SyncConfig's outcomes per namespace, and their sum kept up to date with them. */
interface Books {
  byNs: Map<string, ItemCounts>;
  synced: number;
  deleted: number;
  failed: number;
  /** The namespaces whose outcome has errors, in the order they began to have some. */
  failing: Set<string>;
}

export class StatusLedger {
  readonly #byConfig = new Map<string, Books>();

  /** A valid SyncConfig: its counts are kept (none yet if it is new). */
  track(cfgKey: string): void {
    if (this.#byConfig.has(cfgKey)) return;
    this.#byConfig.set(cfgKey, { byNs: new Map(), synced: 0, deleted: 0, failed: 0, failing: new Set() });
  }

  /** The SyncConfig went or became invalid: its counts go. */
  drop(cfgKey: string): void {
    this.#byConfig.delete(cfgKey);
  }

  /**
   * Records the outcome of a sync of `cfgKey` in `namespace`. Returns the previous outcome and whether it changed;
   * nothing is recorded for a SyncConfig that is not tracked (deleted or made invalid meanwhile). What is kept is an
   * equal outcome, shared with other namespaces when it has no failure: outcomes are read, never changed.
   */
  record(
    cfgKey: string,
    namespace: string,
    outcome: ItemCounts,
  ): { changed: boolean; before?: ItemCounts } {
    const books = this.#byConfig.get(cfgKey);
    if (!books) return { changed: false };
    const before = books.byNs.get(namespace);
    if (before && deepEqual(before, outcome)) return { changed: false, before };
    const kept = outcome.failed === 0 && outcome.errors.length === 0
      ? clean.shared(`${outcome.synced}/${outcome.deleted}`, { ...outcome, errors: [] })
      : outcome;
    if (before) count(books, before, -1);
    books.byNs.set(namespace, kept);
    count(books, kept, 1);
    // A namespace that keeps failing keeps its place among the errors.
    if (kept.errors.length === 0) books.failing.delete(namespace);
    else books.failing.add(namespace);
    return { changed: true, before };
  }

  /** `cfgKey` does not select `namespace` any more; true if it had counts there. */
  remove(cfgKey: string, namespace: string): boolean {
    const books = this.#byConfig.get(cfgKey);
    const before = books?.byNs.get(namespace);
    if (!books || !before) return false;
    count(books, before, -1);
    books.failing.delete(namespace);
    return books.byNs.delete(namespace);
  }

  /** The namespace went; returns the SyncConfigs whose counts changed. */
  forgetNamespace(namespace: string): string[] {
    const changed: string[] = [];
    for (const [cfgKey] of this.#byConfig) if (this.remove(cfgKey, namespace)) changed.push(cfgKey);
    return changed;
  }

  /** Whether any SyncConfig has counts in `namespace` (it was selected before). */
  counts(namespace: string): boolean {
    for (const books of this.#byConfig.values()) if (books.byNs.has(namespace)) return true;
    return false;
  }

  outcomes(cfgKey: string): Iterable<ItemCounts> {
    return this.#byConfig.get(cfgKey)?.byNs.values() ?? [];
  }

  /**
   * The outcomes of `cfgKey` added up, as its status shows them: kept as they change, because a status is written
   * after every burst, and adding up 5,000 namespaces each time would cost more than the burst's own sync.
   */
  total(cfgKey: string): ItemCounts {
    const books = this.#byConfig.get(cfgKey);
    if (!books) return { synced: 0, deleted: 0, failed: 0, errors: [] };
    const errors = [...books.failing].flatMap((ns) => books.byNs.get(ns)!.errors);
    return { synced: books.synced, deleted: books.deleted, failed: books.failed, errors };
  }
}

/** Adds (`sign` 1) or takes away (-1) an outcome's counts from the sum. */
function count(books: Books, o: ItemCounts, sign: 1 | -1): void {
  books.synced += sign * o.synced;
  books.deleted += sign * o.deleted;
  books.failed += sign * o.failed;
}
