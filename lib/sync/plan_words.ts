/**
 * A plan in words, for the debug log (`-v`): what espejo decided for one item in one namespace and why, so an
 * admin can tell a skipped item from a written one without reading the code.
 */
import { getLogger } from "@logtape/logtape";
import type { FailureSite, ItemResult } from "./failures.ts";
import type { DeletePlan, SyncPlan } from "./planner.ts";

export function syncPlanWords(plan: SyncPlan): string {
  switch (plan.kind) {
    case "none":
      return "skipped: it matches what the item asks for";
    case "hold":
      return `held back: a fight over it is on, restore in ${plan.retryInMs} ms`;
    case "backoff":
      return `skipped: the same attempt failed before and waits out its backoff (${failedWith(plan.result)})`;
    case "fail":
      return `failed before any write (${failedWith(plan.result)})`;
    case "create":
      return plan.restore
        ? "create: someone else deleted it or took espejo's label off; restoring it"
        : "create: it does not exist";
    case "update":
      return `${plan.restore ? "restore" : "update"}: ${plan.reason}` +
        (plan.replace === "never" ? "" : `; replaced if the server refuses the update (${plan.replace})`);
  }
}

export function deletePlanWords(plan: DeletePlan): string {
  switch (plan.kind) {
    case "absent":
      return "skipped: it does not exist";
    case "backoff":
      return `skipped: the same delete failed before and waits out its backoff (${failedWith(plan.result)})`;
    case "delete":
      return `delete: it exists (uid ${plan.uid})`;
  }
}

function failedWith(result: ItemResult): string {
  return result.state === "failed" ? result.message : result.state;
}

const log = getLogger(["espejo", "decision"]);

/**
 * One debug line for one item's decision in one namespace, with what came of it when something was written. The
 * words are built only when debug is on: a full comparison of 100,000 items pays nothing for it without `-v`.
 */
export function logDecision(site: FailureSite, words: () => string, result?: ItemResult): void {
  log.debug("{decision}", () => ({ ...site, decision: words() + (result ? `: ${outcomeWords(result)}` : "") }));
}

/** What came of a written plan, for the same debug line. */
function outcomeWords(result: ItemResult): string {
  switch (result.state) {
    case "synced":
      if (result.waiting) return "left for its namespace's turn at large objects (another namespace has it)";
      return result.action === "none"
        ? "nothing written"
        : `${result.action}${result.reason ? ` (${result.reason})` : ""}`;
    case "deleted":
      return "deleted";
    case "absent":
      return "already gone";
    case "failed":
      return `failed (${result.message})`;
  }
}
