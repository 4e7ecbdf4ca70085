/** What the executor (lib/sync/executor.ts) is told for each item, and what it tells and asks its controller. */
import type { ResourceInfo } from "../kube/discovery.ts";
import type { CompiledSyncConfig } from "../model/syncconfig.ts";
import type { ItemAction } from "./failures.ts";

export interface ItemRef {
  cfg: CompiledSyncConfig;
  namespace: string;
}

export interface ExecutorHooks {
  onWrite?: (action: ItemAction) => void;
  /**
   * Whether SyncConfig `owner` (the owner annotation of an object, which anyone can write) has an item for this
   * object in this namespace and so holds it. Default: no SyncConfig but the writer's own does.
   */
  claims?: (owner: string, resource: ResourceInfo, namespace: string, name: string) => boolean;
  /** A restore of an object that was restored shortly before (a fight) was tried: written or refused. */
  onFight?: (cfgKey: string) => void;
  /** An object was replaced (deleted and created again): a field could not change, or `forceRecreate`. */
  onReplace?: (cfgKey: string, why: "immutable" | "forceRecreate") => void;
  /** Finalizers the item does not set were removed from an object to replace it; `message` names them and it. */
  onFinalizersRemoved?: (cfgKey: string, message: string) => void;
  /** The longest wait between two restores of one object in a fight; the reconcile interval. Default 10 min. */
  maxFightDelayMs?: number;
}
