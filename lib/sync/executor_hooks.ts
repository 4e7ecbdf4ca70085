/** What the executor (lib/sync/executor.ts) is told for each item, and what it tells and asks its controller. */
import type { CompiledSyncConfig } from "../model/syncconfig.ts";
import type { ItemAction } from "./failures.ts";
import type { Claims } from "./planner.ts";

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
}
