/** One interval pass at a time (lib/pass.ts). */
import assert from "node:assert/strict";
import { PassTracker } from "../../lib/controller/pass.ts";

Deno.test("PassTracker: a pass is done when the last namespace it queued is", () => {
  const done: number[] = [];
  const t = new PassTracker((wall) => done.push(wall));
  t.start(() => ["a", "b"]);
  assert.equal(t.running, true);
  t.finished("a");
  t.finished("other"); // a unit the pass did not queue
  assert.equal(done.length, 0);
  t.finished("b");
  assert.equal(done.length, 1);
  assert.equal(t.running, false);
  t.finished("b");
  assert.equal(done.length, 1, "counted once");
});

Deno.test("PassTracker: a pass that queued nothing is done at once", () => {
  const done: number[] = [];
  const t = new PassTracker((_, cpu) => done.push(cpu));
  t.start(() => []);
  assert.equal(done.length, 1);
  assert.equal(t.running, false);
});
