/** When a SyncConfig's status may be written (lib/status_schedule.ts). */
import assert from "node:assert/strict";
import { StatusSchedule } from "../../lib/controller/status_schedule.ts";

function schedule(maxHoldMs = 10_000) {
  const clock = { ms: 0 };
  return { s: new StatusSchedule(maxHoldMs, () => clock.ms), clock };
}

Deno.test("StatusSchedule: a dirty status is ready once its own namespaces are done", () => {
  const { s } = schedule();
  s.markDirty("cfg/a");
  s.queued(["cfg/a"], "ns-1");
  assert.deepEqual(s.takeReady(), []);
  s.finished("ns-1");
  assert.deepEqual(s.takeReady(), ["cfg/a"]);
  assert.deepEqual(s.takeReady(), [], "not dirty once taken");
});

Deno.test("StatusSchedule: another SyncConfig's work does not hold a status back", () => {
  const { s } = schedule();
  s.queued(["cfg/busy"], "ns-1");
  s.markDirty("cfg/a");
  assert.deepEqual(s.takeReady(), ["cfg/a"]);
});

Deno.test("StatusSchedule: a status is not written while its namespaces are still being queued", () => {
  const { s } = schedule();
  s.markDirty("cfg/a");
  s.queueing("cfg/a", true);
  assert.deepEqual(s.takeReady(), []);
  s.queueing("cfg/a", false);
  assert.deepEqual(s.takeReady(), ["cfg/a"]);
});

Deno.test("StatusSchedule: a steady stream of its own work holds a status back at most maxHoldMs", () => {
  const { s, clock } = schedule(10_000);
  s.markDirty("cfg/a");
  // A namespace event every second: there is always one pending namespace.
  for (let t = 0; t < 9; t++) {
    s.queued(["cfg/a"], `ns-${t + 1}`);
    s.finished(`ns-${t}`);
    clock.ms = (t + 1) * 1000;
    s.markDirty("cfg/a");
    assert.deepEqual(s.takeReady(), [], `held at ${clock.ms} ms`);
  }
  assert.equal(s.untilNextDueMs(), 1000);
  clock.ms = 10_000;
  assert.equal(s.untilNextDueMs(), 0);
  assert.deepEqual(s.takeReady(), ["cfg/a"], "written although work is pending");
  assert.equal(s.untilNextDueMs(), undefined, "nothing dirty");
  s.markDirty("cfg/a");
  assert.equal(s.untilNextDueMs(), 10_000, "the hold starts again when it is dirty again");
});

Deno.test("StatusSchedule: forget drops everything of a SyncConfig", () => {
  const { s } = schedule();
  s.markDirty("cfg/a");
  s.queued(["cfg/a"], "ns-1");
  s.forget("cfg/a");
  assert.equal(s.pendingOf("cfg/a"), 0);
  assert.deepEqual(s.takeReady(), []);
  assert.equal(s.untilNextDueMs(), undefined);
});

Deno.test("StatusSchedule: dropWork releases a status held by work that no longer counts (it became Invalid)", () => {
  const { s } = schedule();
  s.queued(["cfg/a"], "ns-1");
  s.queueing("cfg/a", true);
  s.markDirty("cfg/a");
  assert.deepEqual(s.takeReady(), [], "held by its own burst");
  s.dropWork("cfg/a");
  assert.deepEqual(s.takeReady(), ["cfg/a"]);
  assert.equal(s.pendingOf("cfg/a"), 0);
});

Deno.test("StatusSchedule holds a status a minute by default", () => {
  const clock = { ms: 0 };
  const s = new StatusSchedule(undefined, () => clock.ms);
  s.queued(["cfg/a"], "ns-1");
  s.markDirty("cfg/a");
  clock.ms = 59_999;
  assert.deepEqual(s.takeReady(), []);
  clock.ms = 60_000;
  assert.deepEqual(s.takeReady(), ["cfg/a"]);
});

Deno.test("StatusSchedule: work that keeps ending writes a status at most once per gap, and the last one", () => {
  const clock = { ms: 0 };
  const s = new StatusSchedule(60_000, () => clock.ms, 1_000);
  const taken: number[] = [];
  // A namespace whose labels flap: a unit ends every 100 ms for 10 s, each changing the counts.
  for (let t = 0; t < 100; t++) {
    clock.ms = t * 100;
    s.markDirty("cfg/a");
    if (s.takeReady().length) taken.push(clock.ms);
  }
  assert.deepEqual(taken, [0, 1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000]);
  // The flapping stopped at 9,900 ms with a change not written yet: it is due when the gap ends, without a kick.
  assert.equal(s.untilNextDueMs(), 100);
  clock.ms = 10_000;
  assert.deepEqual(s.takeReady(), ["cfg/a"]);
  assert.equal(s.untilNextDueMs(), undefined);
});

Deno.test("StatusSchedule: the gap is per SyncConfig, and a first write is not delayed", () => {
  const clock = { ms: 0 };
  const s = new StatusSchedule(60_000, () => clock.ms, 1_000);
  s.markDirty("cfg/a");
  assert.deepEqual(s.takeReady(), ["cfg/a"]);
  clock.ms = 10;
  s.markDirty("cfg/a");
  s.markDirty("cfg/b");
  assert.deepEqual(s.takeReady(), ["cfg/b"], "b was never written: at once");
  assert.equal(s.untilNextDueMs(), 990);
  s.forget("cfg/a");
  s.markDirty("cfg/a");
  assert.deepEqual(s.takeReady(), ["cfg/a"], "a SyncConfig created again under the key starts without a gap");
});

Deno.test("StatusSchedule: a status held by its work is due at the later of the hold's end and the gap's", () => {
  const clock = { ms: 0 };
  const s = new StatusSchedule(500, () => clock.ms, 1_000);
  s.markDirty("cfg/a");
  assert.deepEqual(s.takeReady(), ["cfg/a"]);
  s.queued(["cfg/a"], "ns-1");
  s.markDirty("cfg/a");
  clock.ms = 600;
  assert.deepEqual(s.takeReady(), [], "the hold is over, the gap is not");
  assert.equal(s.untilNextDueMs(), 400);
  clock.ms = 1_000;
  assert.deepEqual(s.takeReady(), ["cfg/a"]);
});

Deno.test("StatusSchedule: a failed write is held until the queue's back-off releases it, not before", () => {
  const { s, clock } = schedule();
  s.markDirty("cfg/a");
  assert.deepEqual(s.takeReady(), ["cfg/a"]);
  s.hold("cfg/a");
  s.markDirty("cfg/a");
  clock.ms = 60_000;
  assert.deepEqual(s.takeReady(), [], "held however long and however often it changes");
  assert.equal(s.untilNextDueMs(), undefined, "the queue's back-off brings it back, not the writer's wait");
  s.release("cfg/a");
  assert.deepEqual(s.takeReady(), ["cfg/a"]);
  s.markDirty("cfg/a");
  clock.ms = 61_000;
  assert.deepEqual(s.takeReady(), ["cfg/a"], "a later change waits only for the gap again");
});

Deno.test("StatusSchedule.workDone: only once every namespace queued for the SyncConfig is done and none is being queued", () => {
  const { s } = schedule();
  assert.equal(s.workDone("cfg/a"), true);
  s.queueing("cfg/a", true);
  assert.equal(s.workDone("cfg/a"), false, "its namespaces are still being queued");
  s.queued(["cfg/a"], "ns-1");
  s.queueing("cfg/a", false);
  assert.equal(s.workDone("cfg/a"), false);
  s.finished("ns-1");
  assert.equal(s.workDone("cfg/a"), true);
});

Deno.test("StatusSchedule: a unit of a generation that changed while it ran leaves the namespace pending", () => {
  const { s } = schedule();
  s.queued(["cfg/a", "cfg/b"], "ns-1");
  s.finished("ns-1", ["cfg/a"]);
  assert.equal(s.pendingOf("cfg/a"), 1, "cfg/a's new generation has yet to sync ns-1");
  assert.equal(s.pendingOf("cfg/b"), 0);
  s.finished("ns-1");
  assert.equal(s.pendingOf("cfg/a"), 0);
});

Deno.test("StatusSchedule: queueing a new generation's namespaces replaces the work known before", () => {
  const { s } = schedule();
  s.queued(["cfg/a"], "old-only");
  s.queued(["cfg/a"], "both");
  s.queueing("cfg/a", true);
  assert.equal(s.pendingOf("cfg/a"), 0);
  s.queued(["cfg/a"], "both");
  s.queueing("cfg/a", false);
  s.finished("old-only", ["cfg/a"]); // a unit of the old generation, in a namespace the new one does not select
  s.markDirty("cfg/a");
  assert.deepEqual(s.takeReady(), [], "waits for the new generation's unit in both");
  s.finished("both");
  assert.deepEqual(s.takeReady(), ["cfg/a"]);
});
