/**
 * Judges a cached object against the desired object of an item (see lib/model/drift.ts for the rules). {@link assess} is
 * pure: it returns the verdict and what the cache entry should learn from it (a {@link Memo}); {@link remember}
 * applies that, so that the planner decides without touching the caches and the caller records afterwards.
 *
 * A verdict stands for one resourceVersion: once judged, in sync or not, the entry's content is dropped and the
 * verdict kept instead (the baseline when in sync, the out-of-sync record when not).
 */
import { compareByValue, contentHash, extrasHash, type Verdict } from "../model/drift.ts";
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
  const content = contentHash(observed);
  if (known && content === cached.baseline!.content) {
    return { verdict: { inSync: true }, memo: { kind: "inSync", baseline: cached.baseline! } };
  }
  const restore = known;
  const outOfSync = (reason: string, extras?: string) =>
    fromRecord({ desiredHash, reason, restore, content, extras }, serverAdds, true);
  const comparison = compareByValue(desired, observed);
  switch (comparison.kind) {
    case "differs":
      return outOfSync(`${comparison.path} differs from the SyncConfig's item`);
    case "extra":
      if (known) return outOfSync(`${comparison.path} was added`);
      return outOfSync(`${comparison.path}${NOT_SET_BY_ITEM}`, extrasHash(desired, observed));
    case "equal":
      if (known) return outOfSync("a field the item does not set was changed");
      return { verdict: { inSync: true }, memo: { kind: "inSync", baseline: { desiredHash, content } } };
  }
}

/**
 * The verdict of an out-of-sync record. Only fields the item does not set differed (`extras`): in sync once they
 * are exactly what the server added to this item elsewhere; unexplained while that is not known yet.
 */
function fromRecord(record: OutOfSync, serverAdds: string | undefined, isNew: boolean): Assessment {
  if (record.extras !== undefined && record.extras === serverAdds) {
    return {
      verdict: { inSync: true },
      memo: { kind: "inSync", baseline: { desiredHash: record.desiredHash, content: record.content } },
    };
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
