/**
 * Judges a cached object against the desired object of an item (see lib/model/drift.ts for the rules). {@link assess} is
 * pure: it returns the verdict and what the cache entry should learn from it (a {@link Memo}); {@link remember}
 * applies that, so that the planner decides without touching the caches and the caller records afterwards.
 *
 * A verdict stands for one resourceVersion: once judged, in sync or not, the entry's content is dropped and the
 * verdict kept instead (the baseline when in sync, the out-of-sync record when not).
 *
 * A baseline says what a later version of the object must be to be in sync without a write. Our write's reply is
 * kept as its content hash (what the server made of it, webhooks included). An object judged by value is kept as
 * what the comparison proved: the desired object exactly ({@link AS_DESIRED}), or the desired object with the
 * additions of one {@link extrasHash} ({@link WITH_EXTRAS}). Each stands for the same content as its hash would,
 * and costs no hash of the whole object: a restart judges 100,000 objects this way, and keeps 22 characters less
 * of each.
 */
import { compareByValue, type Comparison, contentHash, extrasHash, type Verdict } from "../model/drift.ts";
import type { KubeObject } from "../kube/objects.ts";
import type { CachedObject } from "./cached_object.ts";
import { HASH_ANNOTATION } from "../model/markers.ts";

type OutOfSync = NonNullable<CachedObject["outOfSync"]>;

/**
 * The end of the reason of a record whose only differences are fields the item does not set: after a restart tens of
 * thousands of such records wait for their units, and a packed entry writes the path before it, not the sentence.
 */
export const NOT_SET_BY_ITEM = " is not set by the item (a server default or someone's addition: a write settles it)";
type Baseline = NonNullable<CachedObject["baseline"]>;

/** A baseline's content when the version judged was the desired object exactly (a comparison found it equal). */
export const AS_DESIRED = "";
/** Starts a baseline's content that is the desired object with the additions whose {@link extrasHash} follows. */
export const WITH_EXTRAS = "+";

/** What a verdict teaches the cache entry it was made on. */
export type Memo =
  | { kind: "inSync"; baseline: Baseline }
  | { kind: "outOfSync"; record: OutOfSync }
  /** The content is not needed any more (a marker mismatch decides without it). */
  | { kind: "dropContent" };

export interface Assessment {
  verdict: Verdict;
  memo?: Memo;
}

/**
 * The verdict on `cached` for the desired object of hash `desiredHash`. A contentless entry must be read first (the
 * caller's job): judged as is, it is out of sync.
 */
export function assess(
  desired: KubeObject,
  desiredHash: string,
  cached: CachedObject,
  /** {@link extrasHash} of the reply to our last write of the same item in another namespace, if any. */
  serverAdds?: string,
  /** The object's content, when the caller holds it parsed already (a cache judging it as it reads it). */
  parsed?: KubeObject,
): Assessment {
  const hasContent = parsed !== undefined || cached.json !== undefined;
  const known = cached.baseline?.desiredHash === desiredHash;
  if (cached.contentless) return { verdict: { inSync: false, reason: "its content was not read yet", restore: false } };
  if (cached.desiredHash !== desiredHash) {
    // A marker mismatch is enough to write; a match proves nothing (anyone can copy the annotation).
    const verdict: Verdict = known
      ? { inSync: false, reason: `its ${HASH_ANNOTATION} annotation was changed`, restore: true }
      : { inSync: false, reason: "the SyncConfig's item changed", restore: false };
    return { verdict, memo: hasContent ? { kind: "dropContent" } : undefined };
  }
  if (cached.inSync && known) return { verdict: { inSync: true } };
  const judged = cached.outOfSync;
  if (judged?.desiredHash === desiredHash) return fromRecord(judged, serverAdds, false);
  if (!hasContent) return { verdict: { inSync: false, reason: "it was not judged yet", restore: false } };
  const observed = parsed ?? JSON.parse(cached.json!) as KubeObject;
  let compared: Comparison | undefined;
  const comparison = () => compared ??= compareByValue(desired, observed);
  if (known && matchesBaseline(cached.baseline!.content, desired, observed, comparison)) {
    return { verdict: { inSync: true }, memo: { kind: "inSync", baseline: cached.baseline! } };
  }
  const restore = known;
  const outOfSync = (reason: string, extras?: string) =>
    fromRecord({ desiredHash, reason, restore, extras }, serverAdds, true);
  const c = comparison();
  switch (c.kind) {
    case "differs":
      return outOfSync(`${c.path} differs from the SyncConfig's item`);
    case "extra":
      if (known) return outOfSync(`${c.path} was added`);
      return outOfSync(`${c.path}${NOT_SET_BY_ITEM}`, extrasHash(desired, observed));
    case "equal":
      if (known) return outOfSync("a field the item does not set was changed");
      return { verdict: { inSync: true }, memo: { kind: "inSync", baseline: { desiredHash, content: AS_DESIRED } } };
  }
}

/** Whether `observed` has the content a baseline stands for (see the file comment), for the same desired object. */
function matchesBaseline(
  content: string,
  desired: KubeObject,
  observed: KubeObject,
  comparison: () => Comparison,
): boolean {
  if (content === AS_DESIRED) return comparison().kind === "equal";
  if (content.startsWith(WITH_EXTRAS)) {
    return comparison().kind === "extra" && WITH_EXTRAS + extrasHash(desired, observed) === content;
  }
  return contentHash(observed) === content;
}

/**
 * The verdict of an out-of-sync record. Only fields the item does not set differed (`extras`): in sync once they
 * are exactly what the server added to this item elsewhere; unexplained while that is not known yet.
 */
function fromRecord(record: OutOfSync, serverAdds: string | undefined, isNew: boolean): Assessment {
  if (record.extras !== undefined && record.extras === serverAdds) {
    const baseline = { desiredHash: record.desiredHash, content: WITH_EXTRAS + record.extras };
    return { verdict: { inSync: true }, memo: { kind: "inSync", baseline } };
  }
  const verdict: Verdict = {
    inSync: false,
    reason: record.reason,
    restore: record.restore,
    ...(record.extras !== undefined && serverAdds === undefined ? { unexplained: true as const } : {}),
  };
  return { verdict, memo: isNew ? { kind: "outOfSync", record } : undefined };
}

/** Applies what {@link assess} found to the entry it judged. */
export function remember(cached: CachedObject, memo: Memo | undefined): void {
  if (!memo) return;
  cached.json = undefined;
  if (memo.kind === "outOfSync") cached.outOfSync = memo.record;
  if (memo.kind !== "inSync") return;
  const baseline = memo.baseline;
  cached.inSync = true;
  // The entry's own copy of an equal hash string, so that 20,000 objects do not keep two of each.
  if (cached.desiredHash === baseline.desiredHash) baseline.desiredHash = cached.desiredHash;
  cached.baseline = baseline;
  cached.outOfSync = undefined;
}

/** Records that `written` (the reply of our own write for `desiredHash`) is in sync and becomes the baseline. */
export function acceptWritten(cached: CachedObject, written: KubeObject, desiredHash: string): void {
  remember(cached, { kind: "inSync", baseline: { desiredHash, content: contentHash(written) } });
}
