/** Objects are judged as they arrive only while a cache reads its initial state (lib/sync/judged_on_arrival.ts). */
import assert from "node:assert/strict";
import { InitialState } from "../../lib/kube/initial_state.ts";
import { ObjectStore } from "../../lib/kube/store.ts";
import type { CachedObject } from "../../lib/sync/cached_object.ts";
import { judgedOnArrival } from "../../lib/sync/judged_on_arrival.ts";

const withContent: CachedObject = { resourceVersion: "2", uid: "u", json: "{}" };
const contentless: CachedObject = { resourceVersion: "2", uid: "u", contentless: true };

for (
  const [name, entry, initial, writing, judged] of [
    ["an object of the initial state", withContent, true, false, true],
    ["a watch event after the initial state (a tenant's write)", withContent, false, false, false],
    ["the echo of espejo's own write", withContent, true, true, false],
    ["an object whose content was not kept", contentless, true, false, false],
  ] as const
) {
  Deno.test(`judgedOnArrival: ${name}: ${judged ? "judged" : "left to the unit"}`, () => {
    assert.equal(judgedOnArrival(entry, initial, writing), judged);
  });
}

Deno.test("InitialState: decodes an object of an initial state as one (not a reply)", () => {
  const calls: unknown[][] = [];
  const state = new InitialState(new ObjectStore<string>(), (_raw, _prev, reply, initial) => {
    calls.push([reply, initial]);
    return "v";
  });
  state.add({ metadata: { name: "a", namespace: "n", uid: "u", resourceVersion: "1" } });
  assert.deepEqual(calls, [[false, true]]);
});
