/** Objects are judged as they arrive only while a cache reads its initial state (lib/sync/judged_on_arrival.ts). */
import assert from "node:assert/strict";
import { InitialState } from "../../lib/kube/initial_state.ts";
import { ObjectStore } from "../../lib/kube/store.ts";
import { judgedOnArrival } from "../../lib/sync/judged_on_arrival.ts";

for (
  const [name, initial, writing, judged] of [
    ["an object of the initial state", true, false, true],
    ["a watch event after the initial state (a tenant's write)", false, false, false],
    ["the echo of espejo's own write", true, true, false],
  ] as const
) {
  Deno.test(`judgedOnArrival: ${name}: ${judged ? "judged" : "left to the unit"}`, () => {
    assert.equal(judgedOnArrival(initial, writing), judged);
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
