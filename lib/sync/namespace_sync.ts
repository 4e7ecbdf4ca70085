/**
 * One SyncConfig in one namespace: its deleteItems, then its syncItems in waves (an item waits for the earlier
 * items it refers to), the items of each list concurrently. One item's exception fails that item, not the others or
 * the unit. Folds the item results into the counts of the namespace and what it asks of the queue.
 */
import { getLogger } from "@logtape/logtape";
import type { Executor } from "./executor.ts";
import { contradicted, type FailureFields, type ItemAction, type ItemResult } from "./failures.ts";
import type { CompiledSyncConfig } from "../model/syncconfig.ts";
import type { Contest } from "../model/contradictions.ts";
import type { ItemCounts } from "../model/status.ts";
import { renderTemplate } from "../model/template.ts";
import { foldSteps, type Step, stepOf } from "./step.ts";
import { writeWaves } from "../model/waves.ts";

const log = getLogger(["espejo", "controller"]);

/** A failure as the log writes it (see docs/reference.md, "Logs"). */
export interface LoggedFailure {
  message: string;
  fields?: FailureFields;
}

/** One SyncConfig in one namespace: its counts, its failures for the log, and what it asks of the queue. */
export interface ConfigResult extends Step {
  outcome: ItemCounts;
  /** The failures for the log, values unredacted, with their fields. */
  details: LoggedFailure[];
}

export async function syncConfigInNamespace(
  executor: Pick<Executor, "syncItem" | "deleteItem">,
  cfg: CompiledSyncConfig,
  namespace: string,
  recordChange: (cfgKey: string, action: ItemAction, namespace: string) => void,
  /** Items that contradict another item here, by field (lib/model/contradictions.ts): not performed. */
  contested: ReadonlyMap<string, Contest> = new Map(),
  /** Items that fail before anything is decided for them (lib/sync/delegated_view.ts), by field. */
  refused: ReadonlyMap<string, ItemResult> = new Map(),
): Promise<ConfigResult> {
  const ref = { cfg, namespace };
  // An exception of one item (a bug, an input nobody foresaw) fails that item, not the others or the unit.
  const guarded = async (field: string, run: () => Promise<ItemResult>): Promise<ItemResult> => {
    try {
      return await run();
    } catch (e) {
      const error = `unexpected error: ${e instanceof Error ? e.message : e}`;
      const message = `SyncConfig ${cfg.key}: ${field} in namespace ${namespace}: ${error}`;
      return { state: "failed", message, fields: { item: field, error }, terminal: false };
    }
  };
  const deletes = await Promise.all(cfg.deleteItems.map(async (item) => {
    const field = `.spec.deleteItems[${item.index}]`;
    const refusal = refused.get(field);
    if (refusal) return refusal;
    const contest = contested.get(field);
    if (contest) return contradicted(cfg.key, namespace, field, contest);
    const r = await guarded(field, () => executor.deleteItem(ref, item));
    if (r.state === "deleted") {
      recordChange(cfg.key, "delete", namespace);
      log.info("Deleted {kind} {namespace}/{name} for SyncConfig {syncConfig}", {
        item: `.spec.deleteItems[${item.index}]`,
        kind: item.kind,
        namespace,
        name: renderTemplate(item.name, namespace),
        syncConfig: cfg.key,
      });
    }
    return r;
  }));
  // Items are written concurrently, in waves: an item waits for the earlier items it refers to (a RoleBinding
  // for the Role it binds, which the API server requires to exist when espejo holds no `bind`).
  const syncs: ItemResult[] = new Array(cfg.syncItems.length);
  for (const wave of writeWaves(cfg.syncItems)) {
    await Promise.all(wave.map(async (i) => {
      const item = cfg.syncItems[i];
      const field = `.spec.syncItems[${item.index}]`;
      const contest = contested.get(field);
      const r = refused.get(field) ??
        (contest
          ? contradicted(cfg.key, namespace, field, contest)
          : await guarded(field, () => executor.syncItem(ref, item)));
      if (r.state === "synced" && r.action !== "none") {
        recordChange(cfg.key, r.action, namespace);
        log.info("{action} {kind} {namespace}/{name} for SyncConfig {syncConfig}: {reason}", {
          action: r.action === "create" ? "Created" : r.action === "recreate" ? "Recreated" : "Updated",
          item: `.spec.syncItems[${item.index}]`,
          kind: item.kind,
          namespace,
          name: renderTemplate(item.name, namespace),
          syncConfig: cfg.key,
          reason: r.reason ?? (r.action === "create" ? "it did not exist" : "it differed"),
        });
      }
      syncs[i] = r;
    }));
  }
  const outcome: ItemCounts = { synced: 0, deleted: 0, failed: 0, errors: [] };
  const details: LoggedFailure[] = [];
  const results = [...deletes, ...syncs];
  for (const r of results) {
    if (r.state === "synced") outcome.synced++;
    else if (r.state === "deleted") outcome.deleted++;
    else if (r.state === "failed") {
      outcome.failed++;
      outcome.errors.push(r.message);
      details.push({ message: r.detail ?? r.message, fields: r.fields });
    }
  }
  return { outcome, details, ...foldSteps(results.map(stepOf)) };
}
