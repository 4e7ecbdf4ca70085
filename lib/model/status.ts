/**
 * SyncConfig status as espejo reports it: item counts and the conditions Ready, Errored and Invalid with espejo's
 * reasons. Pure: computes the next status from the previous one, so an unchanged outcome gives an identical
 * status (same lastTransitionTime) and no write.
 *
 * Each condition espejo writes carries the generation it describes (`observedGeneration`), so that `kubectl wait`,
 * Argo CD and Flux can tell an old generation's Ready from the new one's (docs/gitops.md). The v0.5.0 CRD has no
 * `status.observedGeneration` (the API server would prune it), so the conditions are the only place for it. For
 * kstatus's generic rules, which read no Ready, espejo adds its abnormal-true conditions: Stalled beside Invalid, and
 * Reconciling in a status written while a generation's namespaces are still being synced.
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
  /** Reconciling: the counts are partial, a generation's namespaces are still being synced. */
  inProgress: "SynchronizationInProgress",
} as const;

/**
 * A SyncConfig's items by what came of them (synced, deleted, failed, with the errors), in one namespace or summed over
 * all of them.
 */
export interface ItemCounts {
  synced: number;
  deleted: number;
  failed: number;
  /** Messages of failed items, most useful first; the first few go into conditions. */
  errors: string[];
}

const CONDITION_ORDER = ["Ready", "Errored", "Invalid", "Reconciling", "Stalled"];
/** The conditions that say how the latest sync went (kept as they were while a new generation is synced). */
const VERDICTS = ["Ready", "Errored", "Invalid"];

/** Conditions of types espejo does not own (another tool's, a human's) are kept as they are, after espejo's. */
const foreign = (conditions: Condition[]) => conditions.filter((c) => !CONDITION_ORDER.includes(c.type));

function condition(
  previous: Condition[],
  type: string,
  status: "True" | "False",
  reason: string,
  message: string,
  now: string,
  /** The SyncConfig's generation the condition describes; none is written when unknown. */
  generation: number | undefined,
  /** Kept whole when the message is cut (how many more items failed). */
  suffix = "",
): Condition {
  const before = previous.find((c) => c.type === type);
  // As metav1's SetStatusCondition: the time moves with the status only, the generation with every write.
  const lastTransitionTime = before && before.status === status && before.lastTransitionTime
    ? before.lastTransitionTime
    : now;
  const c: Condition = { type, status, reason, message: bounded(message, suffix), lastTransitionTime };
  if (generation !== undefined) c.observedGeneration = generation;
  return c;
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

/**
 * The status for an invalid spec of `generation`: counts zero, Invalid=True with the message, Ready=False, and
 * Stalled=True for kstatus (it is terminal until the spec changes).
 */
export function invalidStatus(
  previous: SyncConfigStatus | undefined,
  message: string,
  now: string,
  generation?: number,
): SyncConfigStatus {
  const prev = previous?.conditions ?? [];
  const conditions = [
    condition(prev, "Ready", "False", Reasons.failed, "Synchronization failed", now, generation),
    condition(prev, "Invalid", "True", Reasons.invalid, message, now, generation),
    condition(prev, "Stalled", "True", Reasons.invalid, message, now, generation),
    ...prev.filter((c) => c.type === "Errored"),
    ...foreign(prev),
  ];
  return sortConditions({ synchronizedItemCount: 0, deletedItemCount: 0, failedItemCount: 0, conditions });
}

/**
 * The status once `generation` was synced in every namespace it selects: Ready unless nothing could be synced or
 * deleted and something failed (espejo). Reconciling and Stalled go.
 */
export function syncedStatus(
  previous: SyncConfigStatus | undefined,
  o: ItemCounts,
  now: string,
  generation?: number,
): SyncConfigStatus {
  const prev = previous?.conditions ?? [];
  const errored = o.synced === 0 && o.deleted === 0 && o.failed > 0;
  const conditions: Condition[] = [];
  const { first, more } = summarize(o.errors);
  if (errored) {
    conditions.push(condition(prev, "Ready", "False", Reasons.failed, "Synchronization failed", now, generation));
    const message = `Could not sync or delete any items: ${first}`;
    conditions.push(condition(prev, "Errored", "True", Reasons.failedWithError, message, now, generation, more));
  } else {
    const message = o.failed > 0
      ? `Synchronization completed with ${o.failed} failed items: ${first}`
      : "Synchronization completed successfully";
    const suffix = o.failed > 0 ? more : "";
    conditions.push(condition(prev, "Ready", "True", Reasons.succeeded, message, now, generation, suffix));
    if (prev.some((c) => c.type === "Errored")) {
      conditions.push(condition(prev, "Errored", "False", Reasons.succeeded, "", now, generation));
    }
  }
  if (prev.some((c) => c.type === "Invalid")) {
    conditions.push(condition(prev, "Invalid", "False", Reasons.valid, "The spec is valid", now, generation));
  }
  conditions.push(...foreign(prev));
  return sortConditions({
    synchronizedItemCount: o.synced,
    deletedItemCount: o.deleted,
    failedItemCount: o.failed,
    conditions,
  });
}

/**
 * The status written while `generation` is still being synced (its burst outlasted the status writer's hold): the
 * counts so far, Reconciling=True, and Ready, Errored and Invalid as the previous status had them, with their older
 * observedGeneration, so that nobody takes the partial counts for the new generation's outcome.
 */
export function progressStatus(
  previous: SyncConfigStatus | undefined,
  o: ItemCounts,
  now: string,
  generation: number,
): SyncConfigStatus {
  const prev = previous?.conditions ?? [];
  const message = `Generation ${generation} is being synchronized; the counts are partial`;
  const conditions = [
    ...prev.filter((c) => VERDICTS.includes(c.type)),
    condition(prev, "Reconciling", "True", Reasons.inProgress, message, now, generation),
    ...foreign(prev),
  ];
  return sortConditions({
    synchronizedItemCount: o.synced,
    deletedItemCount: o.deleted,
    failedItemCount: o.failed,
    conditions,
  });
}

/** The generation whose sync `status` reports as done (its Ready condition's), if it says. */
export function syncedGeneration(status: SyncConfigStatus | undefined): number | undefined {
  return status?.conditions?.find((c) => c.type === "Ready")?.observedGeneration;
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
