/**
 * The counts behind each SyncConfig's status: the outcome of its latest sync in each namespace, for the valid
 * SyncConfigs only (an Invalid one has no counts). The status writer adds them up; the controller says what changed.
 */
import type { Outcome } from "../model/status.ts";
import { deepEqual } from "../kube/objects.ts";
import { ValuePool } from "../model/value_pool.ts";

/**
 * Outcomes without failures are shared: at 5,000 namespaces and 5 SyncConfigs almost all 25,000 outcomes are one of a
 * few (every item synced), and an object each would be the ledger's largest cost.
 */
const clean = new ValuePool<Outcome>();

export class StatusLedger {
  readonly #byConfig = new Map<string, Map<string, Outcome>>();

  /** A valid SyncConfig: its counts are kept (none yet if it is new). */
  track(cfgKey: string): void {
    if (!this.#byConfig.has(cfgKey)) this.#byConfig.set(cfgKey, new Map());
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
    outcome: Outcome,
  ): { changed: boolean; before?: Outcome } {
    const byNs = this.#byConfig.get(cfgKey);
    if (!byNs) return { changed: false };
    const before = byNs.get(namespace);
    if (before && deepEqual(before, outcome)) return { changed: false, before };
    const kept = outcome.failed === 0 && outcome.errors.length === 0
      ? clean.shared(`${outcome.synced}/${outcome.deleted}`, { ...outcome, errors: [] })
      : outcome;
    byNs.set(namespace, kept);
    return { changed: true, before };
  }

  /** `cfgKey` does not select `namespace` any more; true if it had counts there. */
  remove(cfgKey: string, namespace: string): boolean {
    return this.#byConfig.get(cfgKey)?.delete(namespace) ?? false;
  }

  /** The namespace went; returns the SyncConfigs whose counts changed. */
  forgetNamespace(namespace: string): string[] {
    const changed: string[] = [];
    for (const [cfgKey, byNs] of this.#byConfig) if (byNs.delete(namespace)) changed.push(cfgKey);
    return changed;
  }

  /** Whether any SyncConfig has counts in `namespace` (it was selected before). */
  counts(namespace: string): boolean {
    for (const byNs of this.#byConfig.values()) if (byNs.has(namespace)) return true;
    return false;
  }

  outcomes(cfgKey: string): Iterable<Outcome> {
    return this.#byConfig.get(cfgKey)?.values() ?? [];
  }
}
