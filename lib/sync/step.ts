/**
 * What one step of a namespace unit came to for the queue: one SyncConfig's items, the prune step, and the whole
 * unit, which folds its steps with {@link foldSteps}. The counts a status adds up travel beside it as
 * {@link ItemCounts} (lib/model/status.ts); what the queue does with a unit's folded step is the retry policy's
 * (lib/sync/retry_policy.ts, `afterWork`), which the queue performs.
 */
import type { ItemResult } from "./failures.ts";
import type { WorkFacts } from "./retry_policy.ts";

/**
 * What the queue hears of any piece of work ({@link WorkFacts}: retry, retry in), and whether it wrote, which tells a
 * unit that changed something from one that found everything in sync (freshness).
 */
export interface Step extends WorkFacts {
  /** Something was written: created, updated, deleted or pruned. */
  wrote: boolean;
  /**
   * An item waits for its namespace's turn at large objects (lib/sync/large_gate.ts), which queues the namespace
   * when it comes: nothing for the queue to do now, but the namespace is not in sync yet.
   */
  waiting?: true;
}

export const NO_STEP: Step = { wrote: false, retry: false };

/** The steps together: wrote or retry if any did, back after the shortest wait any asked for. */
export function foldSteps(steps: Iterable<Step>): Step {
  let out: Step = NO_STEP;
  for (const s of steps) {
    const waits = [out.retryInMs, s.retryInMs].filter((w) => w !== undefined);
    out = {
      wrote: out.wrote || s.wrote,
      retry: out.retry || s.retry,
      ...(waits.length ? { retryInMs: Math.min(...waits) } : {}),
      ...(out.waiting || s.waiting ? { waiting: true } : {}),
    };
  }
  return out;
}

/** What one item's result asks of its namespace's queue. */
export function stepOf(r: ItemResult): Step {
  const wrote = r.state === "deleted" || (r.state === "synced" && r.action !== "none");
  // A terminal failure waits for a change (the next pass finds its attempt in the retry book: no request).
  const retry = r.state === "failed" && !r.terminal;
  const retryInMs = r.state === "synced" ? r.retryInMs : undefined;
  const waiting = r.state === "synced" && r.waiting;
  return { wrote, retry, ...(retryInMs !== undefined ? { retryInMs } : {}), ...(waiting ? { waiting } : {}) };
}
