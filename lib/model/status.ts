/**
 * SyncConfig status as espejo reports it: item counts and the conditions Ready, Errored and Invalid with espejo's
 * reasons. Pure: computes the next status from the previous one, so an unchanged outcome gives an identical
 * status (same lastTransitionTime) and no write.
 */
import { deepEqual } from "../kube/objects.ts";
import type { SyncConfig } from "./syncconfig_types.ts";

export type SyncConfigStatus = NonNullable<SyncConfig["status"]>;
export type Condition = NonNullable<SyncConfigStatus["conditions"]>[number];

export const Reasons = {
  succeeded: "SynchronizationSucceeded",
  failed: "SynchronizationFailed",
  failedWithError: "SynchronizationFailedWithError",
  invalid: "InvalidSyncConfigSpec",
  valid: "ValidSyncConfigSpec",
} as const;

/** What the syncs of one SyncConfig amounted to, summed over its target namespaces. */
export interface Outcome {
  synced: number;
  deleted: number;
  failed: number;
  /** Messages of failed items, most useful first; the first few go into conditions. */
  errors: string[];
}

const CONDITION_ORDER = ["Ready", "Errored", "Invalid"];

/** Conditions of types espejo does not own (another tool's, a human's) are kept as they are, after espejo's. */
const foreign = (conditions: Condition[]) => conditions.filter((c) => !CONDITION_ORDER.includes(c.type));

function condition(
  previous: Condition[],
  type: string,
  status: "True" | "False",
  reason: string,
  message: string,
  now: string,
  /** Kept whole when the message is cut (how many more items failed). */
  suffix = "",
): Condition {
  const before = previous.find((c) => c.type === type);
  const lastTransitionTime = before && before.status === status && before.lastTransitionTime
    ? before.lastTransitionTime
    : now;
  return { type, status, reason, message: bounded(message, suffix), lastTransitionTime };
}

/** The CRD (metav1.Condition) limits a condition message to 32768 characters; a longer status is refused whole. */
export const MAX_CONDITION_MESSAGE = 32768;

/** Cuts `message` to the CRD's limit; `suffix` (how many more failed) is kept whole after the cut. */
function bounded(message: string, suffix = ""): string {
  if (message.length + suffix.length <= MAX_CONDITION_MESSAGE) return message + suffix;
  let end = MAX_CONDITION_MESSAGE - 3 - suffix.length;
  // Never split a surrogate pair: half a character is not valid UTF-8 on the wire.
  if (/[\ud800-\udbff]/.test(message[end - 1])) end--;
  return `${message.slice(0, end)}...${suffix}`;
}

/** The first error, and how many more there are (kept when the first is cut). */
function summarize(errors: string[]): { first: string; more: string } {
  return { first: errors[0] ?? "", more: errors.length > 1 ? ` (and ${errors.length - 1} more failed items)` : "" };
}

/** The status for an invalid spec: counts zero, Invalid=True with the message, Ready=False. */
export function invalidStatus(previous: SyncConfigStatus | undefined, message: string, now: string): SyncConfigStatus {
  const prev = previous?.conditions ?? [];
  const conditions = [
    condition(prev, "Ready", "False", Reasons.failed, "Synchronization failed", now),
    condition(prev, "Invalid", "True", Reasons.invalid, message, now),
    ...prev.filter((c) => c.type === "Errored"),
    ...foreign(prev),
  ];
  return sortConditions({ synchronizedItemCount: 0, deletedItemCount: 0, failedItemCount: 0, conditions });
}

/** The status after syncing: Ready unless nothing could be synced or deleted and something failed (espejo). */
export function syncedStatus(previous: SyncConfigStatus | undefined, o: Outcome, now: string): SyncConfigStatus {
  const prev = previous?.conditions ?? [];
  const errored = o.synced === 0 && o.deleted === 0 && o.failed > 0;
  const conditions: Condition[] = [];
  if (errored) {
    conditions.push(condition(prev, "Ready", "False", Reasons.failed, "Synchronization failed", now));
    const { first, more } = summarize(o.errors);
    const message = `Could not sync or delete any items: ${first}`;
    conditions.push(condition(prev, "Errored", "True", Reasons.failedWithError, message, now, more));
  } else {
    const { first, more } = summarize(o.errors);
    const message = o.failed > 0
      ? `Synchronization completed with ${o.failed} failed items: ${first}`
      : "Synchronization completed successfully";
    conditions.push(condition(prev, "Ready", "True", Reasons.succeeded, message, now, o.failed > 0 ? more : ""));
    if (prev.some((c) => c.type === "Errored")) {
      conditions.push(condition(prev, "Errored", "False", Reasons.succeeded, "", now));
    }
  }
  if (prev.some((c) => c.type === "Invalid")) {
    conditions.push(condition(prev, "Invalid", "False", Reasons.valid, "The spec is valid", now));
  }
  conditions.push(...foreign(prev));
  return sortConditions({
    synchronizedItemCount: o.synced,
    deletedItemCount: o.deleted,
    failedItemCount: o.failed,
    conditions,
  });
}

function sortConditions(s: SyncConfigStatus): SyncConfigStatus {
  // Foreign conditions go last, in their own order (sort is stable).
  const rank = (c: Condition) => CONDITION_ORDER.includes(c.type) ? CONDITION_ORDER.indexOf(c.type) : 99;
  s.conditions?.sort((a, b) => rank(a) - rank(b));
  return s;
}

/** Whether writing `next` would change anything visible; the comparison ignores condition order. */
export function statusChanged(current: SyncConfigStatus | undefined, next: SyncConfigStatus): boolean {
  if (!current) return true;
  const norm = (s: SyncConfigStatus) => ({
    ...s,
    conditions: [...(s.conditions ?? [])].sort((a, b) => a.type.localeCompare(b.type)),
  });
  return !deepEqual(norm(current), norm(next));
}
