/**
 * The units of work of the queue, and why each was queued. A work item is a namespace to sync against every
 * SyncConfig that selects it, a SyncConfig to recompile (which then queues the namespaces it selects), the
 * pruning bookkeeping of one SyncConfig, or a failed status write of one SyncConfig coming back after its back-off. The
 * trigger travels with the item into the metrics; it is never derived from the priority, so a retry is counted
 * as a retry, not as the namespace event that it shares a priority with.
 */
export type WorkItem =
  | { kind: "namespace"; name: string }
  | { kind: "syncConfig"; key: string }
  /** Only the pruning bookkeeping of a SyncConfig: its finalizer, and whether a deleted one can be released. */
  | { kind: "pruning"; key: string }
  /** A status write that failed is due again (its back-off is the queue's, like every retry's). */
  | { kind: "status"; key: string };

export type Trigger = "namespace" | "syncconfig" | "interval" | "retry";

/** Queue priorities: lower goes first. A retry goes with namespace events, ahead of passes. */
export const PRIORITY: Record<Trigger, number> = { namespace: 0, retry: 0, syncconfig: 1, interval: 2 };
export const PRIORITIES = 3;

/** The queue's key of an item: one per namespace and one per SyncConfig, so that each is queued at most once. */
export function workKey(item: WorkItem): string {
  if (item.kind === "namespace") return `ns/${item.name}`;
  if (item.kind === "status") return `status/${item.key}`;
  return item.kind === "syncConfig" ? `cfg/${item.key}` : `prune/${item.key}`;
}

/** The queue's keys of a SyncConfig's work: what forgets its failures when it goes. */
export function configWorkKeys(cfgKey: string): string[] {
  return (["syncConfig", "pruning", "status"] as const).map((kind) => workKey({ kind, key: cfgKey }));
}

export function workItemOf(key: string): WorkItem {
  if (key.startsWith("cfg/")) return { kind: "syncConfig", key: key.slice(4) };
  if (key.startsWith("prune/")) return { kind: "pruning", key: key.slice(6) };
  if (key.startsWith("status/")) return { kind: "status", key: key.slice(7) };
  return { kind: "namespace", name: key.slice(3) };
}
