/**
 * Pruning, opted into per SyncConfig (annotation {@link PRUNE_ANNOTATION}, or `--prune-default`): which of the
 * objects a SyncConfig created in a namespace it no longer wants. Pure; the namespace unit performs the plans with
 * the applier, and `espejo plan` prints them.
 *
 * The guarantees, each a rule below or a check of the caller:
 * - only objects espejo created for this SyncConfig are candidates: both the owner annotation and the creation
 *   record (CREATED_ANNOTATION, written only by a create) name it; an adopted object has no creation record;
 * - an object another SyncConfig's item names is left to that SyncConfig;
 * - nothing is pruned before the caches that hold the candidates have listed (the caller gets no candidates);
 * - an Invalid SyncConfig, or one with an item it cannot read, prunes nothing (a typo must not delete objects);
 * - pruning off (the annotation removed or "false") prunes nothing, from the next decision on.
 */
import type { ResourceInfo } from "../kube/discovery.ts";
import { deepEqual, type ObjectMeta } from "../kube/objects.ts";
import type { CompileResult } from "../model/syncconfig.ts";
import { PRUNE_ANNOTATION } from "../model/markers.ts";
import { SERVICE_ACCOUNT_ANNOTATION } from "../model/identity.ts";

/** Whether pruning is on for a SyncConfig with this metadata: its annotation, else the default. */
export function pruneEnabled(metadata: ObjectMeta | undefined, pruneDefault: boolean): boolean {
  const value = metadata?.annotations?.[PRUNE_ANNOTATION];
  return value === "true" || (pruneDefault && value !== "false");
}

/** What decides where a SyncConfig stands for pruning (see {@link pruneScope}). */
export interface PruneFacts {
  /** Pruning is on for it (its annotation, else the default). */
  enabled: boolean;
  /** It is being deleted. */
  deleting: boolean;
  /** Its compile result; for one being deleted, compiled from it as it is (its items are what it created). */
  result: CompileResult | undefined;
  /** Whether it selects the namespace in question. */
  selects: boolean;
  /** An item of a kind the server does not know (`espejo plan`; the controller finds out when it lists the kind). */
  unknownKind?: boolean;
}

/**
 * Where a SyncConfig stands for pruning, one rule for the controller and `espejo plan`: off unless pruning is on and
 * every item can be read, a typo must not delete objects (a kind the server does not know counts as a typo, except
 * for one being deleted: its CRD went, and its objects with it); being deleted, everything it created goes.
 */
export function pruneScope(f: PruneFacts): PruneScope {
  if (!f.enabled || !f.result?.ok || f.result.config.syncItems.some((i) => i.problem)) return { kind: "off" };
  if (f.deleting) return { kind: "deleting" };
  return f.unknownKind ? { kind: "off" } : { kind: "active", selects: f.selects };
}

/** An object a SyncConfig created, as the caches (or a list, for `espejo plan`) see it. */
export interface PruneCandidate {
  resource: ResourceInfo;
  namespace: string;
  name: string;
  uid: string;
}

/** Where the SyncConfig stands, for pruning. */
export type PruneScope =
  /** Gone, pruning off, Invalid, or an item it cannot read: nothing is pruned. */
  | { kind: "off" }
  /** Being deleted with pruning on (its finalizer holds it): everything it created goes. */
  | { kind: "deleting" }
  /** Valid with pruning on; `selects`: whether it selects the namespace. */
  | { kind: "active"; selects: boolean };

export type PruneReason = "item removed" | "namespace not selected" | "SyncConfig deleted";

export interface PrunePlan {
  candidate: PruneCandidate;
  reason: PruneReason;
  /** For the log: the object and why it goes. */
  message: string;
  /** Why it goes, for `espejo plan` (which names the object itself). */
  why: string;
}

/**
 * The candidates of `cfgKey` to delete. `namedBy` gives the keys of the valid SyncConfigs that select the
 * candidate's namespace and have a syncItem naming it (the item index).
 */
export function planPrunes(
  cfgKey: string,
  scope: PruneScope,
  candidates: readonly PruneCandidate[],
  namedBy: (c: PruneCandidate) => string[],
): PrunePlan[] {
  if (scope.kind === "off") return [];
  const plans: PrunePlan[] = [];
  for (const c of candidates) {
    const naming = namedBy(c);
    if (naming.some((k) => k !== cfgKey)) continue; // another SyncConfig's item takes it over
    const what = `${c.resource.kind} ${c.namespace}/${c.name}`;
    const add = (reason: PruneReason, why: string) =>
      plans.push({ candidate: c, reason, why, message: `${what}: ${why}` });
    if (scope.kind === "deleting") add("SyncConfig deleted", `SyncConfig ${cfgKey} was deleted`);
    else if (!scope.selects) {
      add("namespace not selected", `SyncConfig ${cfgKey} no longer selects namespace ${c.namespace}`);
    } else if (!naming.includes(cfgKey)) add("item removed", `no syncItem of SyncConfig ${cfgKey} names it any more`);
  }
  return plans;
}

/**
 * The plans a namespace unit performs: those decided `now` (after its writes, with every claim of another SyncConfig
 * known) whose object the unit's start also decided to prune. An object the unit created or wanted when it started
 * is never pruned by it, whatever changed meanwhile (a label, a SyncConfig): the next unit decides on it.
 */
export function confirmedPrunes(atStart: readonly PrunePlan[], now: readonly PrunePlan[]): PrunePlan[] {
  const decided = new Set(atStart.map((p) => p.candidate.uid));
  return now.filter((p) => decided.has(p.candidate.uid));
}

/**
 * How long a namespace's labels must have stayed as they are before espejo prunes what a SyncConfig no longer
 * selecting it created. A namespace admin who toggles a label ten times a second would otherwise cost a create and
 * a delete of every item per toggle; with the wait, objects stay while the labels flap and are in sync when the
 * label comes back, and toggles slower than this cost at most one create and one delete per item per wait.
 */
export const RELABEL_SETTLE_MS = 2_000;

/** How much longer labels changed at `relabelledAt` must stay as they are before a deselection is pruned (0: now). */
export function settlingMs(relabelledAt: number | undefined, now: number): number {
  return relabelledAt === undefined ? 0 : Math.max(0, relabelledAt + RELABEL_SETTLE_MS - now);
}

/**
 * What the prune finalizer of a SyncConfig needs, as a state table (kube-rs `finalizer.rs` is the model): one action
 * for each (being deleted, finalizer present, prunes). `prunes`: pruning is on; for one being deleted, also that its
 * items can be read (a typo must not delete objects, so it is then released without pruning).
 */
export type FinalizerAction =
  /** Nothing holds it or needs holding. */
  | "none"
  /** Pruning was turned on: add the finalizer, then as "watch". */
  | "add"
  /** Pruning was turned off: remove the finalizer. */
  | "remove"
  /** Pruning is on and held: index what it created, queue those namespaces. */
  | "watch"
  /** Deleted but it does not prune: remove the finalizer, leaving what it created in place. */
  | "release"
  /** Deleted and it prunes: queue what is left; remove the finalizer once nothing is. */
  | "prune";

const FINALIZER_TABLE: Record<`${boolean} ${boolean} ${boolean}`, FinalizerAction> = {
  // deleting, finalizer present, prunes
  "false false false": "none",
  "false false true": "add",
  "false true false": "remove",
  "false true true": "watch",
  "true false false": "none",
  "true false true": "none",
  "true true false": "release",
  "true true true": "prune",
};

export function finalizerAction(deleting: boolean, present: boolean, prunes: boolean): FinalizerAction {
  return FINALIZER_TABLE[`${deleting} ${present} ${prunes}`];
}

/**
 * Whether nothing that decides what a SyncConfig syncs or prunes, or as whom, changed: its generation, its deletion,
 * its prune and ServiceAccount annotations and its finalizers. Status writes (espejo's own, every few seconds in a burst) change none of them.
 */
export function sameSpecAndPruning(sc: { metadata?: ObjectMeta }, old: { metadata?: ObjectMeta } | undefined): boolean {
  const a = sc.metadata;
  const b = old?.metadata;
  return a?.generation === b?.generation && a?.deletionTimestamp === b?.deletionTimestamp &&
    a?.annotations?.[PRUNE_ANNOTATION] === b?.annotations?.[PRUNE_ANNOTATION] &&
    a?.annotations?.[SERVICE_ACCOUNT_ANNOTATION] === b?.annotations?.[SERVICE_ACCOUNT_ANNOTATION] &&
    deepEqual(a?.finalizers ?? [], b?.finalizers ?? []);
}
