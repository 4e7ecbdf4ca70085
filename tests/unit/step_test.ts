/** What a step of a namespace unit asks of the queue (lib/sync/step.ts): one item's result, and the fold. */
import assert from "node:assert/strict";
import type { ItemResult } from "../../lib/sync/failures.ts";
import { foldSteps, NO_STEP, type Step, stepOf } from "../../lib/sync/step.ts";

const failed = (terminal: boolean): ItemResult => ({ state: "failed", message: "m", terminal });

Deno.test("stepOf: writes, transient failures, holds and waits for a turn, from one item's result", () => {
  const table: [ItemResult, Step][] = [
    [{ state: "synced", action: "none" }, { wrote: false, retry: false }],
    [{ state: "synced", action: "create" }, { wrote: true, retry: false }],
    [{ state: "synced", action: "none", retryInMs: 900 }, { wrote: false, retry: false, retryInMs: 900 }],
    // Waiting for its turn at large objects, which queues the namespace: no timer, but not in sync.
    [{ state: "synced", action: "none", waiting: true }, { wrote: false, retry: false, waiting: true }],
    [{ state: "deleted" }, { wrote: true, retry: false }],
    [{ state: "absent" }, { wrote: false, retry: false }],
    [failed(false), { wrote: false, retry: true }],
    // A terminal failure waits for a change: nothing brings the namespace back before it.
    [failed(true), { wrote: false, retry: false }],
  ];
  for (const [result, want] of table) assert.deepEqual(stepOf(result), want, JSON.stringify(result));
});

Deno.test("foldSteps: any write, any retry, any wait for a turn, the shortest wait; nothing folds to nothing", () => {
  assert.deepEqual(foldSteps([]), NO_STEP);
  assert.deepEqual(
    foldSteps([
      { wrote: true, retry: false, retryInMs: 4000 },
      { wrote: false, retry: true },
      { wrote: false, retry: false, retryInMs: 1000 },
    ]),
    { wrote: true, retry: true, retryInMs: 1000 },
  );
  assert.deepEqual(foldSteps([{ wrote: false, retry: false }, NO_STEP]), NO_STEP);
  assert.deepEqual(
    foldSteps([NO_STEP, { wrote: false, retry: false, waiting: true }, { wrote: true, retry: false }]),
    { wrote: true, retry: false, waiting: true },
  );
});
