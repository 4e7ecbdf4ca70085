/**
 * Decides what one item needs in one namespace, from a read-only view of what espejo knows: nothing, a write
 * (create or update, with the reason), a wait (a fight's backoff, a failed attempt's backoff) or a failure. Pure:
 * no I/O, no clock, no change to any cache; what the verdict teaches the cache entry is returned as a {@link Memo}
 * for the caller to record. The applier (lib/sync/applier.ts) performs the plan.
 */
import type { ResourceInfo } from "../kube/discovery.ts";
import type { KubeObject } from "../kube/objects.ts";
import type { CompiledSyncConfig, DeleteItemSpec, SyncItemSpec } from "../model/syncconfig.ts";
import type { CachedObject, ExistingObject } from "./cached_object.ts";
import { failure, type FailureSite, type ItemResult, OwnedByOther } from "./failures.ts";
import { assess, type Memo } from "./verdict.ts";

/**
 * Whether SyncConfig `owner` (an owner annotation, which anyone can write) holds this object here against SyncConfig
 * `claimant`: it has an item for it, and does not yield to `claimant` (Registry.holds: one that writes as a
 * ServiceAccount yields to one that writes as espejo).
 */
export type Claims = (
  owner: string,
  claimant: string,
  resource: ResourceInfo,
  namespace: string,
  name: string,
) => boolean;

/** What the planner may read besides the object itself. */
export interface PlanView {
  claims: Claims;
  /** What the server added to espejo's last write of the item (see lib/model/drift.ts, `extrasHash`). */
  serverAdds(itemKey: string): string | undefined;
  /** How long a restore of this object must still wait because of a fight (0: now). */
  fightWaitMs(fightKey: string): number;
  /** Whether the object had a restore recently (a fight may be on); absent: never (`espejo plan`). */
  inFight?(fightKey: string): boolean;
  /** Whether someone else deleted the object or took espejo's label off since espejo wrote it. */
  removedByOther(resource: ResourceInfo, objectKey: string): boolean;
  /** The result of the same failed attempt while it waits out its backoff. */
  backedOff(retryKey: string, attempt: string): ItemResult | undefined;
}

/**
 * The parts of the live object that a replace keeps: its version (optimistic locking) and ownerReferences; and its
 * owner annotation, for the log when it is overwritten.
 */
export interface LiveParts {
  resourceVersion?: string;
  /** The live uid: a replace deletes this object only. */
  uid?: string;
  ownerReferences?: unknown[];
  /** The object has more ownerReferences than the cache keeps: the applier reads them before it writes. */
  referencesUnkept?: true;
  owner?: string;
  /** The live creation record (see CREATED_ANNOTATION), which a replace keeps. */
  createdBy?: string;
}

/**
 * When a write the server refuses is done as a replace instead (delete by uid, then create; lib/sync/replace.ts):
 * `invalid`, any 422 (the SyncConfig's `forceRecreate`); `immutable`, a 422 on a field that cannot change (a restore:
 * someone else changed the object espejo wrote, so it is espejo's to replace, without `forceRecreate`); `never`.
 *
 * Decided here, before the write, because it needs only what the planner knows (restore, forceRecreate); the server's
 * answer picks between the write and its fallback in the applier. A second plan after the refusal would cost another
 * unit and a retry-book entry for a decision that is already made.
 */
export type ReplaceWhen = "never" | "immutable" | "invalid";

export function replaceWhen(forceRecreate: boolean, restore: boolean): ReplaceWhen {
  return forceRecreate ? "invalid" : restore ? "immutable" : "never";
}

export type SyncPlan =
  | { kind: "none" }
  /** A restore held back by a fight: sync the namespace again after `retryInMs`. */
  | { kind: "hold"; retryInMs: number }
  /** The same attempt failed before and waits: its result stands. */
  | { kind: "backoff"; result: ItemResult }
  | { kind: "fail"; result: ItemResult & { state: "failed" } }
  | { kind: "create"; restore: boolean; replace: ReplaceWhen }
  /** `contested`: a restore while a fight is on; a conflict is the fight's next move, not re-read at once. */
  | {
    kind: "update";
    reason: string;
    restore: boolean;
    unexplained: boolean;
    live: LiveParts;
    replace: ReplaceWhen;
    contested: boolean;
  };

/** The item, the object it asks for, and the cached object (read first if it was kept without content). */
export interface SyncTarget {
  cfg: CompiledSyncConfig;
  namespace: string;
  item: SyncItemSpec;
  resource: ResourceInfo;
  desired: KubeObject;
  hash: string;
  observed: CachedObject | undefined;
}

/** The keys one item in one namespace is known by in the books of server additions, fights and retries. */
export interface ItemKeys {
  /** The SyncConfig generation and item, across namespaces. */
  itemKey: string;
  retryKey: string;
  /**
   * What is tried: a new generation or desired object is a new attempt, tried at once; so is a new live version,
   * unless the write is a restore (a fight is keyed on the object: see lib/sync/retry_policy.ts).
   */
  attempt: string;
  fightKey: string;
  objectKey: string;
}

export function keysOf(t: SyncTarget, restore = false): ItemKeys {
  const name = t.desired.metadata!.name!;
  return {
    itemKey: `${t.cfg.key}|${t.item.index}|${t.cfg.generation}`,
    retryKey: `${t.cfg.key}|s${t.item.index}|${t.namespace}`,
    attempt: `${t.cfg.generation}:${t.hash}:${restore ? "restore" : t.observed?.resourceVersion ?? ""}`,
    fightKey: `${t.resource.group}/${t.resource.resource}|${t.namespace}/${name}`,
    objectKey: `${t.namespace}/${name}`,
  };
}

/** The SyncConfig and namespace of an item. */
type SiteRef = { cfg: { key: string; writeAs?: { serviceAccount: string } }; namespace: string };

/** Where a syncItem fails, for messages and the log: its field, with the object it names in this namespace. */
export function syncItemSite(ref: SiteRef, item: SyncItemSpec, renderedName?: string): FailureSite {
  const site: FailureSite = {
    syncConfig: ref.cfg.key,
    namespace: ref.namespace,
    item: `.spec.syncItems[${item.index}]`,
    serviceAccount: ref.cfg.writeAs?.serviceAccount,
  };
  return item.kind && renderedName ? { ...site, kind: item.kind, name: renderedName } : site;
}

export function deleteItemSite(ref: SiteRef, item: DeleteItemSpec, renderedName: string): FailureSite {
  const field = `.spec.deleteItems[${item.index}]`;
  const serviceAccount = ref.cfg.writeAs?.serviceAccount;
  return {
    syncConfig: ref.cfg.key,
    namespace: ref.namespace,
    item: field,
    kind: item.kind,
    name: renderedName,
    serviceAccount,
  };
}

/**
 * What to do with one syncItem in one namespace, from what is cached of its object and the books' view; with what the
 * planner learnt of the object (`memo`, for verdict.ts to keep) and the keys of the attempt as it would be tried (a
 * restore's keyed on the object, not on its version: retry_policy.ts).
 */
export function planSyncItem(t: SyncTarget, view: PlanView): { plan: SyncPlan; memo?: Memo; keys: ItemKeys } {
  let keys = keysOf(t);
  const name = t.desired.metadata!.name!;
  const { observed } = t;
  const owner = observed?.owner;
  const holder = heldByOther(owner, { cfgKey: t.cfg.key, resource: t.resource, namespace: t.namespace, name }, view);
  if (holder) {
    return {
      plan: { kind: "fail", result: failure(syncItemSite(t, t.item, name))(new OwnedByOther(holder, t.cfg)) },
      keys,
    };
  }
  const assessment = observed && assess(t.desired, t.hash, observed, view.serverAdds(keys.itemKey));
  const memo = assessment?.memo;
  const verdict = assessment?.verdict;
  if (verdict?.inSync) return { plan: { kind: "none" }, memo, keys };
  // Changed, deleted or unlabelled by someone else after espejo wrote it (and maybe created again by them under
  // the name, with other content): writing it again is a restore.
  const restore = verdict?.restore === true || view.removedByOther(t.resource, keys.objectKey);
  if (restore) {
    keys = keysOf(t, true);
    const wait = view.fightWaitMs(keys.fightKey);
    if (wait > 0) return { plan: { kind: "hold", retryInMs: wait }, memo, keys };
  }
  const waiting = view.backedOff(keys.retryKey, keys.attempt);
  if (waiting) return { plan: { kind: "backoff", result: waiting }, memo, keys };
  const replace = replaceWhen(t.cfg.forceRecreate, restore);
  if (!observed || !verdict) return { plan: { kind: "create", restore, replace }, memo, keys };
  return {
    plan: {
      kind: "update",
      reason: verdict.reason,
      restore,
      unexplained: verdict.unexplained === true,
      replace,
      contested: restore && (view.inFight?.(keys.fightKey) ?? false),
      live: {
        resourceVersion: observed.resourceVersion,
        uid: observed.uid || undefined,
        ownerReferences: observed.ownerReferences === undefined ? undefined : JSON.parse(observed.ownerReferences),
        ...(observed.referencesUnkept ? { referencesUnkept: true } : {}),
        owner,
        createdBy: observed.createdBy,
      },
    },
    memo,
    keys,
  };
}

/** An object, by the SyncConfig that would write it. */
export interface WriteSite {
  cfgKey: string;
  resource: ResourceInfo;
  namespace: string;
  name: string;
}

/**
 * The other SyncConfig that holds the object: its owner annotation (which anyone can write) names one that has an
 * item for the object in this namespace. One check for the planner, the applier's re-reads and `espejo plan`.
 */
export function heldByOther(
  owner: string | undefined,
  t: WriteSite,
  view: Pick<PlanView, "claims">,
): string | undefined {
  return owner && owner !== t.cfgKey && view.claims(owner, t.cfgKey, t.resource, t.namespace, t.name)
    ? owner
    : undefined;
}

/**
 * A create that finds its object there without espejo's label (made by hand, by the Go espejo) adopts it: an update
 * at the version found, keeping its ownerReferences; unless another SyncConfig's item holds it. The applier decides
 * so from the object its create found (the caches hold only labelled objects), `espejo plan` from its snapshot.
 */
export type AdoptPlan = { kind: "adopt"; live: LiveParts } | { kind: "held"; owner: string };

export function planAdoption(t: WriteSite, live: LiveParts, view: Pick<PlanView, "claims">): AdoptPlan {
  const owner = heldByOther(live.owner, t, view);
  return owner ? { kind: "held", owner } : { kind: "adopt", live };
}

export type DeletePlan =
  | { kind: "absent" }
  | { kind: "backoff"; result: ItemResult }
  | { kind: "delete"; uid: string; retryKey: string; attempt: string };

/** A deleteItem whose object (by the metadata cache of its kind) is `existing`, or absent. */
export function planDeleteItem(
  t: { cfg: CompiledSyncConfig; namespace: string; item: DeleteItemSpec; existing: ExistingObject | undefined },
  view: Pick<PlanView, "backedOff">,
): DeletePlan {
  if (!t.existing) return { kind: "absent" };
  const retryKey = `${t.cfg.key}|d${t.item.index}|${t.namespace}`;
  const attempt = `${t.cfg.generation}:${t.existing.uid}`;
  const waiting = view.backedOff(retryKey, attempt);
  if (waiting) return { kind: "backoff", result: waiting };
  return { kind: "delete", uid: t.existing.uid, retryKey, attempt };
}
