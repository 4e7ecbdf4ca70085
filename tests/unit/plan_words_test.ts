/** The debug log's words for a plan (lib/sync/plan_words.ts): every plan says what was decided and why. */
import assert from "node:assert/strict";
import { deletePlanWords, syncPlanWords } from "../../lib/sync/plan_words.ts";
import type { DeletePlan, SyncPlan } from "../../lib/sync/planner.ts";

const failed = { state: "failed" as const, message: "SyncConfig a/b: .spec.syncItems[0]: refused", terminal: true };
const live = { resourceVersion: "7" } as unknown as Extract<SyncPlan, { kind: "update" }>["live"];

const SYNC: [SyncPlan, RegExp][] = [
  [{ kind: "none" }, /^skipped: it matches/],
  [{ kind: "hold", retryInMs: 4000 }, /^held back: a fight .* 4000 ms/],
  [{ kind: "backoff", result: failed }, /^skipped: the same attempt failed before .*refused\)$/],
  [{ kind: "fail", result: failed }, /^failed before any write \(SyncConfig a\/b/],
  [{ kind: "create", restore: false, replace: "never" }, /^create: it does not exist$/],
  [{ kind: "create", restore: true, replace: "immutable" }, /^create: someone else deleted it/],
  [
    {
      kind: "update",
      reason: "data.a differs",
      restore: true,
      unexplained: false,
      live,
      replace: "immutable",
      contested: false,
    },
    /^restore: data\.a differs; replaced if the server refuses the update \(immutable\)$/,
  ],
  [
    {
      kind: "update",
      reason: "new generation",
      restore: false,
      unexplained: false,
      live,
      replace: "never",
      contested: false,
    },
    /^update: new generation$/,
  ],
];

for (const [plan, words] of SYNC) {
  Deno.test(`syncPlanWords says why for a ${plan.kind} plan: ${words.source}`, () => {
    assert.match(syncPlanWords(plan), words);
  });
}

const DELETE: [DeletePlan, RegExp][] = [
  [{ kind: "absent" }, /^skipped: it does not exist$/],
  [{ kind: "backoff", result: failed }, /^skipped: the same delete failed before/],
  [{ kind: "delete", uid: "u-1", retryKey: "k", attempt: "a" }, /^delete: it exists \(uid u-1\)$/],
];

for (const [plan, words] of DELETE) {
  Deno.test(`deletePlanWords says why for a ${plan.kind} plan`, () => {
    assert.match(deletePlanWords(plan), words);
  });
}
