/**
 * The units of work of the queue, and why each was queued. A work item is a namespace to sync against every
 * SyncConfig that selects it, or a SyncConfig to recompile (which then queues the namespaces it selects). The
 * trigger travels with the item into the metrics; it is never derived from the priority, so a retry is counted
 * as a retry, not as the namespace event that it shares a priority with.
 */
export type WorkItem = { kind: "namespace"; name: string } | { kind: "syncConfig"; key: string };

export type Trigger = "namespace" | "syncconfig" | "interval" | "retry";

/** Queue priorities: lower goes first. A retry goes with namespace events, ahead of passes. */
export const PRIORITY: Record<Trigger, number> = { namespace: 0, retry: 0, syncconfig: 1, interval: 2 };
export const PRIORITIES = 3;

/** The queue's key of an item: one per namespace and one per SyncConfig, so that each is queued at most once. */
export function workKey(item: WorkItem): string {
  return item.kind === "namespace" ? `ns/${item.name}` : `cfg/${item.key}`;
}

export function workItemOf(key: string): WorkItem {
  return key.startsWith("cfg/") ? { kind: "syncConfig", key: key.slice(4) } : { kind: "namespace", name: key.slice(3) };
}
