/** What the executor (lib/sync/executor.ts) is told for each item, and what it tells and asks its controller. */
import { getLogger } from "@logtape/logtape";
import type { CompiledSyncConfig } from "../model/syncconfig.ts";
import type { Applied } from "./applier.ts";
import type { ItemAction } from "./failures.ts";
import type { LargeGate } from "./large_gate.ts";
import type { Claims, SyncTarget } from "./planner.ts";

const log = getLogger(["espejo", "executor"]);

export interface ItemRef {
  cfg: CompiledSyncConfig;
  namespace: string;
}

export interface ExecutorHooks {
  onWrite?: (action: ItemAction) => void;
  /**
   * Whether SyncConfig `owner` (the owner annotation of an object, which anyone can write) holds this object in this
   * namespace against the writer (lib/sync/planner.ts, Claims). Default: no SyncConfig but the writer's own does.
   */
  claims?: Claims;
  /** A restore of an object that was restored shortly before (a fight) was tried: written or refused. */
  onFight?: (cfgKey: string) => void;
  /** An object was replaced (deleted and created again): a field could not change, or `forceRecreate`. */
  onReplace?: (cfgKey: string, why: "immutable" | "forceRecreate") => void;
  /** Finalizers the item does not set were removed from an object to replace it; `message` names them and it. */
  onFinalizersRemoved?: (cfgKey: string, message: string) => void;
  /** The longest wait between two restores of one object in a fight; the reconcile interval. Default 10 min. */
  maxFightDelayMs?: number;
  /**
   * The turns at reads and writes of large objects, which queue a namespace when its turn comes. Default: a gate of
   * its own that queues nothing (an item left waiting is tried again by the next unit of its namespace).
   */
  large?: LargeGate;
}

/** Tells the hooks that `t`'s object was replaced, and logs and tells them of the finalizers removed to replace it. */
export function reportReplace(hooks: ExecutorHooks, t: SyncTarget, replaced: NonNullable<Applied["replaced"]>): void {
  hooks.onReplace?.(t.cfg.key, replaced.why);
  const removed = replaced.finalizersRemoved;
  if (!removed.length) return;
  const message = `SyncConfig ${t.cfg.key}: removed finalizer${removed.length > 1 ? "s" : ""} ${
    removed.join(", ")
  } of ${t.resource.kind} ${t.namespace}/${t.desired.metadata!.name}, which its item does not set, to replace it`;
  log.warn("{message}", { syncConfig: t.cfg.key, namespace: t.namespace, message });
  hooks.onFinalizersRemoved?.(t.cfg.key, message);
}
