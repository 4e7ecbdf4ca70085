/**
 * The Events a status flush of one SyncConfig produces: its spec problem, its item failures grouped across
 * namespaces (at most {@link MAX_FAILURE_EVENTS} a flush; the status counts them all), and a summary of what was
 * written since the last flush. The EventRecorder aggregates repeats.
 */
import type { ItemAction } from "../sync/failures.ts";
import { type EventRecorder, groupFailures } from "../kube/events.ts";
import { type CompileResult, refOf, type SyncConfig } from "../model/syncconfig.ts";

/** Warning events per SyncConfig and status flush, one per distinct item failure. */
const MAX_FAILURE_EVENTS = 25;

export class SyncEvents {
  readonly #changes = new Map<string, { actions: Map<ItemAction, number>; namespaces: Set<string> }>();

  constructor(readonly recorder: EventRecorder) {}

  /** An object was written for SyncConfig `cfgKey` in `namespace`: said in its next Synchronized event. */
  recordChange(cfgKey: string, action: ItemAction, namespace: string): void {
    let c = this.#changes.get(cfgKey);
    if (!c) this.#changes.set(cfgKey, c = { actions: new Map(), namespaces: new Set() });
    c.actions.set(action, (c.actions.get(action) ?? 0) + 1);
    c.namespaces.add(namespace);
  }

  /** Events for one SyncConfig after a flush: its spec problem, its grouped item failures, what changed. */
  async emit(key: string, sc: SyncConfig, result: CompileResult, errors: string[]): Promise<void> {
    const target = refOf(sc);
    if (!result.ok) {
      await this.recorder.emit(target, "Warning", "InvalidSyncConfigSpec", result.message);
      return;
    }
    for (const message of groupFailures(errors).slice(0, MAX_FAILURE_EVENTS)) {
      await this.recorder.emit(target, "Warning", "SyncFailed", message);
    }
    const changes = this.#changes.get(key);
    this.#changes.delete(key);
    if (changes) {
      const words: Record<ItemAction, string> = {
        create: "created",
        update: "updated",
        recreate: "recreated",
        delete: "deleted",
        prune: "pruned",
        none: "",
      };
      const parts = [...changes.actions].map(([action, n]) => `${n} ${words[action]}`);
      const count = changes.namespaces.size;
      await this.recorder.emit(
        target,
        "Normal",
        "Synchronized",
        `Objects ${parts.join(", ")} in ${count} namespace${count > 1 ? "s" : ""}`,
      );
    }
  }

  /** The SyncConfig went: what it wrote is not reported. */
  forget(cfgKey: string): void {
    this.#changes.delete(cfgKey);
  }
}
