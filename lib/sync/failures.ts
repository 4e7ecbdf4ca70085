/**
 * Failures of one item, classified once. A failure carries a message naming the SyncConfig, the item, the
 * namespace and the reason, with the values an API error quotes redacted (status and Events are readable by anyone
 * who can read SyncConfigs; `detail`, for the log, keeps them).
 *
 * Terminal failures cannot succeed by retrying the same thing: a spec problem, an unknown kind, a write the API
 * server refused as invalid, forbidden or not found. They wait for a change of the SyncConfig's generation, of the
 * desired object or of the live object (or an hour, see lib/sync/retry_book.ts). Everything else (conflicts,
 * throttling, server errors, timeouts, a cache still filling) is retried with backoff.
 */
import { ApiError, isConflict, isRetriable } from "../kube/errors.ts";
import type { TryOutcome } from "./retry_policy.ts";
import { UnknownKindError } from "../kube/discovery.ts";
import { redactValues } from "../model/redact.ts";

export type ItemAction = "create" | "update" | "recreate" | "delete" | "prune" | "none";

export type ItemResult =
  /** `retryInMs`: a restore held back because of a fight; the namespace must be synced again after it. */
  | { state: "synced"; action: ItemAction; reason?: string; retryInMs?: number }
  | { state: "deleted" }
  | { state: "absent" }
  /** `message` goes into status and Events (values redacted), `detail` into the log. */
  | { state: "failed"; message: string; detail?: string; terminal: boolean };

/** Turns an error into the failure of one item; `prefix` names the SyncConfig, the item and the namespace. */
export type Fail = (e: unknown) => ItemResult;

export function failure(prefix: string): Fail {
  return (e) => {
    const reason = reasonOf(e);
    return {
      state: "failed",
      message: `${prefix}: ${redactValues(reason)}`,
      detail: `${prefix}: ${reason}`,
      terminal: isTerminal(e),
    };
  };
}

/** Whether the same request can only fail again until something changes (see the file comment). */
export function isTerminal(e: unknown): boolean {
  if (e instanceof UnknownKindError || e instanceof OwnedByOther) return true;
  if (e instanceof ApiError) return !isRetriable(e);
  return false;
}

/** What a failed write came to, for the retry policy (lib/sync/retry_policy.ts). */
export function tryOutcomeOf(e: unknown): TryOutcome {
  if (isConflict(e)) return "conflict";
  return isTerminal(e) ? "terminal" : "transient";
}

/** The object is held by another SyncConfig that has an item for it. */
export class OwnedByOther extends Error {
  constructor(readonly owner: string) {
    super(`the object is already managed by SyncConfig ${owner}; two SyncConfigs cannot write the same object`);
    this.name = "OwnedByOther";
  }
}

/** Why `e` happened, in words for a status message (before redaction). */
export function reasonOf(e: unknown): string {
  if (e instanceof ApiError) {
    const reason = e.reason !== "Unknown" ? `${e.reason}: ` : "";
    return `the API server refused it (${e.code} ${reason}${e.message})`;
  }
  return e instanceof Error ? e.message : String(e);
}
