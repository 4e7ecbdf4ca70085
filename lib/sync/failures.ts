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
import { type Contest, mayBeTold } from "../model/contradictions.ts";
import { redactValues } from "../model/redact.ts";
import { missingRightHint } from "./missing_right.ts";

export type ItemAction = "create" | "update" | "recreate" | "delete" | "prune" | "none";

export type ItemResult =
  /**
   * `retryInMs`: a restore held back because of a fight; the namespace must be synced again after it. `waiting`: a
   * read or write of a large object left for when its namespace has the turn at them (lib/sync/large_gate.ts, which
   * queues the namespace then).
   */
  | { state: "synced"; action: ItemAction; reason?: string; retryInMs?: number; waiting?: true }
  | { state: "deleted" }
  | { state: "absent" }
  /**
   * `message` goes into status and Events (values redacted); `detail` and `fields` into the log, which only the
   * cluster admin reads.
   */
  | { state: "failed"; message: string; detail?: string; fields?: FailureFields; terminal: boolean };

/** Where an item failed: the SyncConfig, the item's field (`.spec.syncItems[2]`) and the object it names. */
export interface FailureSite {
  syncConfig: string;
  namespace: string;
  item: string;
  kind?: string;
  name?: string;
  /** The ServiceAccount the SyncConfig writes as (`namespace/name`), when it names one. */
  serviceAccount?: string;
}

/** A failure's fields in the log (see docs/reference.md, "Logs"): what a pipeline filters and groups by. */
export interface FailureFields {
  /** The item's field; a prune, which no item asks for, has none. */
  item?: string;
  kind?: string;
  name?: string;
  /** The ServiceAccount the write was sent as (`namespace/name`); none: espejo's own identity. */
  serviceAccount?: string;
  /** The HTTP status code and the Status reason (`Forbidden`, `Invalid`), when the API server refused it. */
  code?: number;
  reason?: string;
  /** Why, unredacted. */
  error: string;
}

/** How a failure's message begins: `SyncConfig ns/a: .spec.syncItems[0] (Role view) in namespace team-a`. */
export function siteText(site: FailureSite): string {
  const object = site.kind && site.name ? ` (${site.kind} ${site.name})` : "";
  return `SyncConfig ${site.syncConfig}: ${site.item}${object} in namespace ${site.namespace}`;
}

/** Turns an error into the failure of one item at `site`. */
export type Fail = (e: unknown) => ItemResult & { state: "failed" };

export function failure(site: FailureSite): Fail {
  const prefix = siteText(site);
  return (e) => {
    const why = reasonOf(e);
    const reason = why + missingRightHint(why, site.serviceAccount, site.namespace);
    const fields: FailureFields = {
      item: site.item,
      kind: site.kind,
      name: site.name,
      ...(site.serviceAccount ? { serviceAccount: site.serviceAccount } : {}),
      ...errorFields(e),
      error: reason,
    };
    return {
      state: "failed",
      message: `${prefix}: ${redactValues(reason)}`,
      detail: `${prefix}: ${reason}`,
      fields,
      terminal: isTerminal(e),
    };
  };
}

/** The log fields of an error: the API server's code and reason when it refused, and why, unredacted. */
export function errorFields(e: unknown): Pick<FailureFields, "code" | "reason" | "error"> {
  const error = reasonOf(e);
  return e instanceof ApiError ? { code: e.code, reason: e.reason, error } : { error };
}

/** An item the SyncConfig's spec got wrong (`problem` names the field): it fails before any request. */
export function specProblem(syncConfig: string, item: string, problem: string): ItemResult & { state: "failed" } {
  return {
    state: "failed",
    message: `SyncConfig ${syncConfig}: ${problem}`,
    fields: { item, error: problem },
    terminal: true,
  };
}

/**
 * An item (`field`) of SyncConfig `syncConfig` that contradicts another in `namespace` (lib/model/contradictions.ts):
 * nothing is sent for it until one of the two SyncConfigs changes (or, undecided, until the rights are asked again).
 */
export function contradicted(
  syncConfig: string,
  namespace: string,
  field: string,
  c: Contest,
): ItemResult & { state: "failed" } {
  const site = { syncConfig, namespace, item: field, kind: c.kind, name: c.name };
  const fields = { item: field, kind: c.kind, name: c.name, error: c.problem };
  // Undecided (a right could not be asked): tried again with back-off, not kept as the answer.
  return { state: "failed", message: `${siteText(site)}: ${c.problem}`, fields, terminal: !c.undecided };
}

/** Whether the same request can only fail again until something changes (see the file comment). */
export function isTerminal(e: unknown): boolean {
  if (e instanceof UnknownKindError || e instanceof OwnedByOther || e instanceof AccessDenied) return true;
  if (e instanceof ApiError) return !isRetriable(e);
  return false;
}

/** What a failed write came to, for the retry policy (lib/sync/retry_policy.ts). */
export function tryOutcomeOf(e: unknown): TryOutcome {
  if (isConflict(e)) return "conflict";
  return isTerminal(e) ? "terminal" : "transient";
}

/**
 * The object is held by another SyncConfig that has an item for it. `claimant`: the SyncConfig that wanted it; one of
 * an untrusted namespace is told the holder's name only if it is of its own namespace (lib/model/contradictions.ts).
 */
export class OwnedByOther extends Error {
  constructor(readonly owner: string, claimant?: { key: string; trusted: boolean }) {
    const shown = !claimant || mayBeTold(owner, claimant) ? `SyncConfig ${owner}` : "another SyncConfig";
    super(`the object is already managed by ${shown}; two SyncConfigs cannot write the same object`);
    this.name = "OwnedByOther";
  }
}

/**
 * The ServiceAccount of a SyncConfig of an untrusted namespace may not read the object its item names (an access
 * review, lib/sync/delegated_view.ts): nothing is decided for the item from espejo's caches. `denial` is the API
 * server's words for the refusal of the request, so the hint of lib/sync/missing_right.ts applies.
 */
export class AccessDenied extends Error {
  constructor(readonly denial: string, list: "syncItems" | "deleteItems") {
    super(
      `its ServiceAccount may ${list === "syncItems" ? "not get" : "neither get nor delete"} the object (${denial}), ` +
        "and espejo decides nothing for a SyncConfig of an untrusted namespace from what its ServiceAccount may not " +
        "read",
    );
    this.name = "AccessDenied";
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
