/**
 * The generation in espejo's conditions (lib/model/status.ts), and what kubectl wait, Argo CD (docs/gitops.md's Lua),
 * Flux (its CEL) and kstatus's generic rules make of every kind of status: an edit is in progress until espejo wrote
 * the new generation's status, whatever the old one said.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import {
  invalidStatus,
  type ItemCounts,
  progressStatus,
  Reasons,
  statusChanged,
  type SyncConfigStatus,
  syncedGeneration,
  syncedStatus,
} from "../../lib/model/status.ts";
import {
  argoHealth,
  fluxHealth,
  kstatusGeneric,
  kubectlWaitMet,
  type StatusObject,
} from "../../testenv/gitops_health.ts";

const T1 = "2024-01-01T00:00:00Z";
const T2 = "2024-01-01T00:05:00Z";
const outcome = (synced: number, deleted: number, failed: number, errors: string[] = []): ItemCounts => ({
  synced,
  deleted,
  failed,
  errors,
});
const FOREIGN = {
  type: "Audited",
  status: "True",
  reason: "PolicyChecked",
  message: "checked by a policy engine",
  lastTransitionTime: T1,
};
/** The SyncConfig as a tool reads it: `status` under an object of `generation`. */
const object = (generation: number, status: SyncConfigStatus): StatusObject => ({
  apiVersion: "sync.appuio.ch/v1alpha1",
  kind: "SyncConfig",
  metadata: { generation },
  status,
});
const types = (s: SyncConfigStatus) => s.conditions?.map((c) => c.type);

Deno.test("syncedStatus and invalidStatus stamp the generation on espejo's conditions, not on foreign ones", () => {
  const previous = { conditions: [FOREIGN] } as SyncConfigStatus;
  const synced = syncedStatus(previous, outcome(0, 0, 1, ["e"]), T1, 3);
  assert.deepEqual(types(synced), ["Ready", "Errored", "Audited"]);
  for (const c of synced.conditions!.slice(0, 2)) assert.equal(c.observedGeneration, 3, c.type);
  assert.deepEqual(synced.conditions!.at(-1), FOREIGN);
  const invalid = invalidStatus(synced, "bad", T2, 4);
  assert.deepEqual(types(invalid), ["Ready", "Errored", "Invalid", "Stalled", "Audited"]);
  const byType = Object.fromEntries(invalid.conditions!.map((c) => [c.type, c.observedGeneration]));
  assert.deepEqual(byType, { Ready: 4, Errored: 3, Invalid: 4, Stalled: 4, Audited: undefined }, "Errored kept");
});

Deno.test("A new generation with the same outcome changes the status (one write) but no lastTransitionTime", () => {
  const first = syncedStatus(undefined, outcome(2, 0, 0), T1, 1);
  const second = syncedStatus(first, outcome(2, 0, 0), T2, 2);
  assert.equal(statusChanged(first, second), true);
  assert.equal(second.conditions![0].lastTransitionTime, T1);
  assert.equal(statusChanged(second, syncedStatus(second, outcome(2, 0, 0), T2, 2)), false, "then no more writes");
});

Deno.test("progressStatus keeps the previous verdicts and their generation, with Reconciling and the counts so far", () => {
  const done = syncedStatus({ conditions: [FOREIGN] } as SyncConfigStatus, outcome(5, 0, 0), T1, 1);
  const progress = progressStatus(done, outcome(7, 1, 0), T2, 2);
  assert.deepEqual(
    [progress.synchronizedItemCount, progress.deletedItemCount, progress.failedItemCount],
    [7, 1, 0],
  );
  assert.deepEqual(types(progress), ["Ready", "Reconciling", "Audited"]);
  assert.deepEqual(progress.conditions![0], done.conditions![0], "Ready as it was, for generation 1");
  assert.deepEqual(progress.conditions![1], {
    type: "Reconciling",
    status: "True",
    reason: Reasons.inProgress,
    message: "Generation 2 is being synchronized; the counts are partial",
    lastTransitionTime: T2,
    observedGeneration: 2,
  });
  assert.equal(syncedGeneration(progress), 1);
  const settled = syncedStatus(progress, outcome(9, 1, 0), T2, 2);
  assert.deepEqual(types(settled), ["Ready", "Audited"], "Reconciling goes once the generation is synced");
  assert.equal(syncedGeneration(settled), 2);
  assert.deepEqual(types(invalidStatus(progress, "bad", T2, 2)), ["Ready", "Invalid", "Stalled", "Audited"]);
});

Deno.test("progressStatus of a new SyncConfig has no Ready yet", () => {
  const s = progressStatus(undefined, outcome(1, 0, 0), T1, 1);
  assert.deepEqual(types(s), ["Reconciling"]);
  assert.equal(syncedGeneration(s), undefined);
});

// [name, status, generation the object has, kubectl wait Ready met, Argo CD, Flux, kstatus]
const TABLE: [string, SyncConfigStatus, number, boolean, string, string, string][] = [
  ["synced", syncedStatus(undefined, outcome(3, 0, 0), T1, 1), 1, true, "Healthy", "Current", "Current"],
  [
    "synced, some failed",
    syncedStatus(undefined, outcome(3, 0, 1, ["e"]), T1, 1),
    1,
    true,
    "Healthy",
    "Current",
    "Current",
  ],
  ["errored", syncedStatus(undefined, outcome(0, 0, 2, ["e"]), T1, 1), 1, false, "Degraded", "Failed", "Current"],
  ["invalid", invalidStatus(undefined, "bad", T1, 1), 1, false, "Degraded", "Failed", "Failed"],
  // An edit espejo has not synced yet: the stored status is the old generation's.
  [
    "synced, then edited",
    syncedStatus(undefined, outcome(3, 0, 0), T1, 1),
    2,
    false,
    "Progressing",
    "InProgress",
    "Current",
  ],
  [
    "errored, then edited",
    syncedStatus(undefined, outcome(0, 0, 2, ["e"]), T1, 1),
    2,
    false,
    "Progressing",
    "InProgress",
    "Current",
  ],
  ["invalid, then edited", invalidStatus(undefined, "bad", T1, 1), 2, false, "Progressing", "InProgress", "Failed"],
  [
    "a long burst of generation 2",
    progressStatus(syncedStatus(undefined, outcome(3, 0, 0), T1, 1), outcome(4, 0, 0), T2, 2),
    2,
    false,
    "Progressing",
    "InProgress",
    "InProgress",
  ],
  [
    "new, a long first burst",
    progressStatus(undefined, outcome(4, 0, 0), T1, 1),
    1,
    false,
    "Progressing",
    "InProgress",
    "InProgress",
  ],
  // A status written by the Go espejo (no generation): never taken for the current generation's.
  [
    "without observedGeneration",
    { ...syncedStatus(undefined, outcome(3, 0, 0), T1) },
    1,
    true,
    "Progressing",
    "InProgress",
    "Current",
  ],
];

for (const [name, status, generation, waitMet, argo, flux, kstatus] of TABLE) {
  Deno.test(`GitOps verdicts of a status that is ${name}`, () => {
    const obj = object(generation, status);
    assert.equal(kubectlWaitMet(obj, "Ready"), waitMet, "kubectl wait --for=condition=Ready");
    assert.equal(argoHealth(obj).status, argo, "Argo CD");
    assert.equal(fluxHealth(obj), flux, "Flux");
    assert.equal(kstatusGeneric(obj), kstatus, "kstatus");
  });
}

Deno.test("GitOps verdicts of a SyncConfig without a status: Argo CD waits, Flux cannot evaluate yet", () => {
  const obj: StatusObject = { apiVersion: "sync.appuio.ch/v1alpha1", kind: "SyncConfig", metadata: { generation: 1 } };
  assert.equal(argoHealth(obj).status, "Progressing");
  assert.equal(fluxHealth(obj), "Error");
  assert.equal(kubectlWaitMet(obj, "Ready"), false);
});

Deno.test("Argo CD's message is the condition's: the first failure of an errored SyncConfig", () => {
  const s = syncedStatus(undefined, outcome(0, 0, 1, ["ConfigMap x: forbidden"]), T1, 1);
  assert.equal(argoHealth(object(1, s)).message, "Could not sync or delete any items: ConfigMap x: forbidden");
});

const step = fc.oneof(
  fc.record({
    kind: fc.constant("synced" as const),
    o: fc.tuple(fc.nat(5), fc.nat(5), fc.nat(5)).map(([s, d, f]) => outcome(s, d, f, f > 0 ? ["e"] : [])),
  }),
  fc.record({ kind: fc.constant("invalid" as const), o: fc.constant(outcome(0, 0, 0)) }),
  fc.record({
    kind: fc.constant("progress" as const),
    o: fc.tuple(fc.nat(5), fc.nat(5)).map(([s, d]) => outcome(s, d, 0)),
  }),
);

Deno.test("Whatever came before, a status of an older generation is in progress for all; a settled one is not", () => {
  fc.assert(
    fc.property(fc.array(fc.tuple(step, fc.integer({ min: 0, max: 2 })), { minLength: 1, maxLength: 12 }), (steps) => {
      let status: SyncConfigStatus | undefined;
      let generation = 1;
      for (const [{ kind, o }, bump] of steps) {
        generation += bump;
        status = kind === "invalid"
          ? invalidStatus(status, "bad", T1, generation)
          : kind === "progress"
          ? progressStatus(status, o, T1, generation)
          : syncedStatus(status, o, T1, generation);
        const edited = object(generation + 1, status);
        assert.equal(kubectlWaitMet(edited, "Ready"), false);
        assert.equal(argoHealth(edited).status, "Progressing");
        assert.equal(fluxHealth(edited), "InProgress");
        const now = object(generation, status);
        if (kind === "progress") {
          // Ready is an older generation's (or none yet): all wait.
          if (syncedGeneration(status) !== generation) {
            assert.equal(argoHealth(now).status, "Progressing");
            assert.equal(fluxHealth(now), "InProgress");
          }
          assert.equal(kstatusGeneric(now), "InProgress");
        } else {
          assert.notEqual(argoHealth(now).status, "Progressing");
          assert.notEqual(fluxHealth(now), "InProgress");
          assert.equal(kstatusGeneric(now), kind === "invalid" ? "Failed" : "Current");
        }
      }
    }),
    { numRuns: 100 },
  );
});
