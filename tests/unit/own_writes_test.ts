/** espejo's own writes told apart from everyone else's changes (lib/sync/own_writes.ts). */
import assert from "node:assert/strict";
import { OwnWrites } from "../../lib/sync/own_writes.ts";

const K = "configmaps|team-a/cm";

Deno.test("OwnWrites: the echo of espejo's own write, before or after its reply, is no one else's change", () => {
  for (const echoFirst of [true, false]) {
    const own = new OwnWrites();
    own.begin(K);
    if (echoFirst) assert.equal(own.arrived(K, "7"), true, "held until the write ends");
    own.produced(K, "7");
    if (!echoFirst) assert.equal(own.arrived(K, "7"), true);
    assert.equal(own.end(K), false);
    assert.equal(own.writing(K), false);
  }
});

Deno.test("OwnWrites: a version someone else made during espejo's write is reported when the write ends", () => {
  const own = new OwnWrites();
  own.begin(K);
  own.produced(K, "7");
  own.arrived(K, "7");
  own.arrived(K, "8");
  assert.equal(own.end(K), true);
});

Deno.test("OwnWrites: outside a write every event is someone else's", () => {
  const own = new OwnWrites();
  assert.equal(own.arrived(K, "3"), false);
  assert.equal(own.end(K), false, "an end without a begin reports nothing");
});

Deno.test("OwnWrites: a removal by someone else stands until espejo writes the object again, or deletes it itself", () => {
  const own = new OwnWrites();
  own.removed(K);
  assert.equal(own.removedByOther(K), true);
  own.rewritten(K);
  assert.equal(own.removedByOther(K), false);
  own.removed(K);
  own.begin(K);
  assert.equal(own.endDelete(K, true), false, "espejo's own delete is no one else's change");
  assert.equal(own.removedByOther(K), false);
  own.begin(K);
  own.arrived(K, "9");
  assert.equal(own.endDelete(K, false), true, "a delete that did not happen ends as a write does");
});

Deno.test("OwnWrites: at most 10,000 removals are remembered, the oldest forgotten first", () => {
  const own = new OwnWrites();
  for (let i = 0; i <= 10_000; i++) own.removed(`k${i}`);
  assert.equal(own.removedByOther("k0"), false);
  assert.equal(own.removedByOther("k1"), true);
  assert.equal(own.removedByOther("k10000"), true);
});
