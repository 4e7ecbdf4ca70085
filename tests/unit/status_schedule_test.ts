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
  assert.equal(s.untilHoldEndsMs(), 1000);
  clock.ms = 10_000;
  assert.equal(s.untilHoldEndsMs(), 0);
  assert.deepEqual(s.takeReady(), ["cfg/a"], "written although work is pending");
  assert.equal(s.untilHoldEndsMs(), undefined, "nothing dirty");
  s.markDirty("cfg/a");
  assert.equal(s.untilHoldEndsMs(), 10_000, "the hold starts again when it is dirty again");
});

Deno.test("StatusSchedule: forget drops everything of a SyncConfig", () => {
  const { s } = schedule();
  s.markDirty("cfg/a");
  s.queued(["cfg/a"], "ns-1");
  s.forget("cfg/a");
  assert.equal(s.pendingOf("cfg/a"), 0);
  assert.deepEqual(s.takeReady(), []);
  assert.equal(s.untilHoldEndsMs(), undefined);
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
