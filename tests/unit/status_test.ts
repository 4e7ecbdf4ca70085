import assert from "node:assert/strict";
import fc from "fast-check";
import {
  type Condition,
  invalidStatus,
  type ItemCounts,
  MAX_CONDITION_MESSAGE,
  Reasons,
  statusChanged,
  type SyncConfigStatus,
  syncedStatus,
} from "../../lib/model/status.ts";

const T1 = "2024-01-01T00:00:00Z";
const T2 = "2024-01-01T00:05:00Z";
const T3 = "2024-01-01T00:10:00Z";

const outcome = (synced: number, deleted: number, failed: number, errors: string[] = []): ItemCounts => ({
  synced,
  deleted,
  failed,
  errors,
});

const cond = (s: SyncConfigStatus, type: string): Condition | undefined => s.conditions?.find((c) => c.type === type);

Deno.test("Reasons are espejo's condition reasons", () => {
  assert.deepEqual(Reasons, {
    succeeded: "SynchronizationSucceeded",
    failed: "SynchronizationFailed",
    failedWithError: "SynchronizationFailedWithError",
    invalid: "InvalidSyncConfigSpec",
    valid: "ValidSyncConfigSpec",
    inProgress: "SynchronizationInProgress",
  });
});

Deno.test("syncedStatus reports counts and Ready=True after a clean sync", () => {
  assert.deepEqual(syncedStatus(undefined, outcome(3, 1, 0), T1), {
    synchronizedItemCount: 3,
    deletedItemCount: 1,
    failedItemCount: 0,
    conditions: [{
      type: "Ready",
      status: "True",
      reason: "SynchronizationSucceeded",
      message: "Synchronization completed successfully",
      lastTransitionTime: T1,
    }],
  });
});

// [name, outcome, errored]: Errored only when nothing was synced or deleted and something failed.
const ERRORED: [string, ItemCounts, boolean][] = [
  ["nothing at all", outcome(0, 0, 0), false],
  ["only failures", outcome(0, 0, 2, ["e1", "e2"]), true],
  ["one failure", outcome(0, 0, 1, ["e1"]), true],
  ["some synced, some failed", outcome(1, 0, 5, ["e1"]), false],
  ["some deleted, some failed", outcome(0, 1, 5, ["e1"]), false],
  ["only synced", outcome(4, 0, 0), false],
  ["only deleted", outcome(0, 4, 0), false],
];

for (const [name, o, errored] of ERRORED) {
  Deno.test(`syncedStatus with ${name} is ${errored ? "Errored and not Ready" : "Ready"}`, () => {
    const s = syncedStatus(undefined, o, T1);
    assert.equal(cond(s, "Ready")?.status, errored ? "False" : "True");
    assert.equal(cond(s, "Ready")?.reason, errored ? Reasons.failed : Reasons.succeeded);
    if (errored) {
      assert.equal(cond(s, "Errored")?.status, "True");
      assert.equal(cond(s, "Errored")?.reason, Reasons.failedWithError);
    } else {
      assert.equal(cond(s, "Errored"), undefined, "no Errored condition is invented");
    }
    assert.equal(s.synchronizedItemCount, o.synced);
    assert.equal(s.deletedItemCount, o.deleted);
    assert.equal(s.failedItemCount, o.failed);
  });
}

Deno.test("syncedStatus puts the first error and how many more failed into the Errored message", () => {
  const s = syncedStatus(undefined, outcome(0, 0, 3, ["first", "second", "third"]), T1);
  assert.equal(cond(s, "Errored")?.message, "Could not sync or delete any items: first (and 2 more failed items)");
  assert.equal(cond(s, "Ready")?.message, "Synchronization failed");
  const one = syncedStatus(undefined, outcome(0, 0, 1, ["only"]), T1);
  assert.equal(cond(one, "Errored")?.message, "Could not sync or delete any items: only");
});

Deno.test("syncedStatus mentions partial failures in the Ready message", () => {
  const s = syncedStatus(undefined, outcome(2, 0, 2, ["e1", "e2"]), T1);
  assert.equal(
    cond(s, "Ready")?.message,
    "Synchronization completed with 2 failed items: e1 (and 1 more failed items)",
  );
});

Deno.test("syncedStatus keeps lastTransitionTime when a condition's status is unchanged", () => {
  const first = syncedStatus(undefined, outcome(1, 0, 0), T1);
  const second = syncedStatus(first, outcome(2, 0, 1, ["e"]), T2); // message changes, status does not
  assert.equal(cond(second, "Ready")?.status, "True");
  assert.equal(cond(second, "Ready")?.lastTransitionTime, T1);
  assert.notEqual(cond(second, "Ready")?.message, cond(first, "Ready")?.message);
});

Deno.test("syncedStatus moves lastTransitionTime when a condition's status flips", () => {
  const ok = syncedStatus(undefined, outcome(1, 0, 0), T1);
  const broken = syncedStatus(ok, outcome(0, 0, 1, ["e"]), T2);
  assert.equal(cond(broken, "Ready")?.status, "False");
  assert.equal(cond(broken, "Ready")?.lastTransitionTime, T2);
  assert.equal(cond(broken, "Errored")?.lastTransitionTime, T2);
  const stillBroken = syncedStatus(broken, outcome(0, 0, 1, ["e"]), T3);
  assert.equal(cond(stillBroken, "Errored")?.lastTransitionTime, T2);
  const fixed = syncedStatus(stillBroken, outcome(1, 0, 0), T3);
  assert.equal(cond(fixed, "Ready")?.status, "True");
  assert.equal(cond(fixed, "Ready")?.lastTransitionTime, T3);
});

Deno.test("syncedStatus turns an earlier Errored condition False instead of dropping it", () => {
  const broken = syncedStatus(undefined, outcome(0, 0, 1, ["e"]), T1);
  const fixed = syncedStatus(broken, outcome(1, 0, 0), T2);
  assert.deepEqual(cond(fixed, "Errored"), {
    type: "Errored",
    status: "False",
    reason: Reasons.succeeded,
    message: "",
    lastTransitionTime: T2,
  });
});

Deno.test("syncedStatus turns an earlier Invalid condition False with ValidSyncConfigSpec", () => {
  const invalid = invalidStatus(undefined, "SyncConfig a/b: bad", T1);
  const fixed = syncedStatus(invalid, outcome(1, 0, 0), T2);
  assert.deepEqual(cond(fixed, "Invalid"), {
    type: "Invalid",
    status: "False",
    reason: Reasons.valid,
    message: "The spec is valid",
    lastTransitionTime: T2,
  });
  assert.equal(cond(fixed, "Ready")?.status, "True");
  assert.equal(cond(fixed, "Ready")?.lastTransitionTime, T2);
});

Deno.test("invalidStatus zeroes counts, sets Invalid=True with the message, Ready=False and Stalled=True", () => {
  const previous = syncedStatus(undefined, outcome(5, 2, 1, ["e"]), T1);
  assert.deepEqual(invalidStatus(previous, "SyncConfig a/b: .spec.x is wrong", T2), {
    synchronizedItemCount: 0,
    deletedItemCount: 0,
    failedItemCount: 0,
    conditions: [
      {
        type: "Ready",
        status: "False",
        reason: Reasons.failed,
        message: "Synchronization failed",
        lastTransitionTime: T2,
      },
      {
        type: "Invalid",
        status: "True",
        reason: Reasons.invalid,
        message: "SyncConfig a/b: .spec.x is wrong",
        lastTransitionTime: T2,
      },
      {
        type: "Stalled",
        status: "True",
        reason: Reasons.invalid,
        message: "SyncConfig a/b: .spec.x is wrong",
        lastTransitionTime: T2,
      },
    ],
  });
});

Deno.test("invalidStatus keeps an earlier Errored condition as it was", () => {
  const errored = syncedStatus(undefined, outcome(0, 0, 1, ["e"]), T1);
  const s = invalidStatus(errored, "bad", T2);
  assert.deepEqual(cond(s, "Errored"), cond(errored, "Errored"));
  assert.equal(cond(s, "Ready")?.lastTransitionTime, T1, "Ready was already False");
  assert.deepEqual(s.conditions?.map((c) => c.type), ["Ready", "Errored", "Invalid", "Stalled"]);
});

Deno.test("invalidStatus keeps lastTransitionTime when the spec stays invalid with a new message", () => {
  const first = invalidStatus(undefined, "first problem", T1);
  const second = invalidStatus(first, "second problem", T2);
  assert.equal(cond(second, "Invalid")?.lastTransitionTime, T1);
  assert.equal(cond(second, "Invalid")?.message, "second problem");
  assert.equal(statusChanged(first, second), true, "the message changed");
});

Deno.test("statusChanged is true without a current status", () => {
  assert.equal(statusChanged(undefined, syncedStatus(undefined, outcome(0, 0, 0), T1)), true);
});

Deno.test("statusChanged is true for a different count, message or condition status", () => {
  const base = syncedStatus(undefined, outcome(1, 0, 0), T1);
  assert.equal(statusChanged(base, syncedStatus(base, outcome(2, 0, 0), T2)), true);
  assert.equal(statusChanged(base, syncedStatus(base, outcome(1, 0, 1, ["e"]), T2)), true);
  assert.equal(statusChanged(base, syncedStatus(base, outcome(0, 0, 1, ["e"]), T2)), true);
  assert.equal(statusChanged(base, invalidStatus(base, "bad", T2)), true);
});

Deno.test("statusChanged ignores condition order", () => {
  const s = syncedStatus(syncedStatus(undefined, outcome(0, 0, 1, ["e"]), T1), outcome(1, 0, 0), T2);
  assert.ok((s.conditions?.length ?? 0) >= 2);
  const reordered = { ...s, conditions: [...(s.conditions ?? [])].reverse() };
  assert.equal(statusChanged(reordered, s), false);
});

const arbOutcome = fc.record({
  synced: fc.nat(5),
  deleted: fc.nat(5),
  failed: fc.nat(5),
}).chain((o) =>
  fc.array(fc.string({ minLength: 1, maxLength: 10 }), { minLength: o.failed, maxLength: o.failed })
    .map((errors): ItemCounts => ({ ...o, errors }))
);

/** Any status these functions can produce: a history of outcomes and invalid specs. */
const arbHistory = fc.array(fc.oneof(arbOutcome, fc.string({ minLength: 1, maxLength: 10 })), { maxLength: 5 });

function replay(history: (ItemCounts | string)[]): SyncConfigStatus | undefined {
  let s: SyncConfigStatus | undefined;
  history.forEach((h, i) => {
    const now = `2024-01-01T00:00:${String(i).padStart(2, "0")}Z`;
    s = typeof h === "string" ? invalidStatus(s, h, now) : syncedStatus(s, h, now);
  });
  return s;
}

Deno.test("syncedStatus of the same outcome again is identical and statusChanged is false", () => {
  fc.assert(
    fc.property(arbHistory, arbOutcome, (history, o) => {
      const first = syncedStatus(replay(history), o, "2025-01-01T00:00:00Z");
      const again = syncedStatus(first, o, "2025-06-01T00:00:00Z");
      assert.deepEqual(again, first);
      assert.equal(statusChanged(first, again), false);
    }),
  );
});

Deno.test("invalidStatus with the same message again is identical and statusChanged is false", () => {
  fc.assert(
    fc.property(arbHistory, fc.string({ minLength: 1 }), (history, message) => {
      const first = invalidStatus(replay(history), message, "2025-01-01T00:00:00Z");
      const again = invalidStatus(first, message, "2025-06-01T00:00:00Z");
      assert.deepEqual(again, first);
      assert.equal(statusChanged(first, again), false);
    }),
  );
});

Deno.test("syncedStatus always yields one Ready condition, Errored exactly per espejo's rule, conditions in order", () => {
  fc.assert(
    fc.property(arbHistory, arbOutcome, (history, o) => {
      const s = syncedStatus(replay(history), o, T3);
      const types = s.conditions?.map((c) => c.type) ?? [];
      assert.equal(types.filter((t) => t === "Ready").length, 1);
      assert.equal(new Set(types).size, types.length, "condition types are unique");
      const order = ["Ready", "Errored", "Invalid"];
      assert.deepEqual([...types].sort((a, b) => order.indexOf(a) - order.indexOf(b)), types);
      const errored = o.synced === 0 && o.deleted === 0 && o.failed > 0;
      assert.equal(cond(s, "Ready")?.status, errored ? "False" : "True");
      assert.equal(cond(s, "Errored")?.status ?? "False", errored ? "True" : "False");
      assert.equal(cond(s, "Invalid")?.status ?? "False", "False");
      for (const c of s.conditions ?? []) assert.ok(c.lastTransitionTime, `${c.type} has a lastTransitionTime`);
    }),
  );
});

Deno.test("syncedStatus and invalidStatus keep conditions of types espejo does not own", () => {
  const theirs = {
    type: "Audited",
    status: "True",
    reason: "PolicyChecked",
    message: "checked by a policy engine",
    lastTransitionTime: "2024-01-01T00:00:00Z",
  };
  const previous = { conditions: [theirs] } as SyncConfigStatus;
  const synced = syncedStatus(previous, outcome(1, 0, 0), T1);
  assert.deepEqual(synced.conditions?.map((c) => c.type), ["Ready", "Audited"]);
  assert.deepEqual(synced.conditions?.at(-1), theirs);
  const invalid = invalidStatus(synced, "SyncConfig a/b: bad", T2);
  assert.deepEqual(invalid.conditions?.map((c) => c.type), ["Ready", "Invalid", "Stalled", "Audited"]);
  assert.deepEqual(invalid.conditions?.at(-1), theirs);
});

Deno.test("condition messages are cut to the CRD's 32768 characters, never inside a character", () => {
  const long = "x".repeat(MAX_CONDITION_MESSAGE - 4) + "😀".repeat(10);
  const s = invalidStatus(undefined, long, T1);
  const message = cond(s, "Invalid")!.message;
  assert.ok(message.length <= MAX_CONDITION_MESSAGE, String(message.length));
  assert.ok(message.endsWith("..."));
  assert.doesNotMatch(message, /[\ud800-\udbff](?![\udc00-\udfff])/, "no lone high surrogate");
  const short = invalidStatus(undefined, "short", T1);
  assert.equal(cond(short, "Invalid")!.message, "short");
});

Deno.test("a cut failure message keeps how many more items failed", () => {
  const first = "e".repeat(2 * MAX_CONDITION_MESSAGE);
  for (
    const [status, type] of [[syncedStatus(undefined, outcome(1, 0, 3, [first, "b", "c"]), T1), "Ready"], [
      syncedStatus(undefined, outcome(0, 0, 3, [first, "b", "c"]), T1),
      "Errored",
    ]] as const
  ) {
    const message = cond(status, type)!.message;
    assert.ok(message.length <= MAX_CONDITION_MESSAGE, `${type}: ${message.length}`);
    assert.ok(message.endsWith("... (and 2 more failed items)"), `${type}: ${message.slice(-40)}`);
  }
});
