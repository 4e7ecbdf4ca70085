/** What the server added to each item's writes (lib/sync/server_adds.ts): learnt once, bounded, forgotten per SyncConfig. */
import assert from "node:assert/strict";
import { ServerAdds } from "../../lib/sync/server_adds.ts";

Deno.test("ServerAdds keeps what the first write of an item learnt", () => {
  const adds = new ServerAdds();
  adds.learn("espejo/a|0|1", () => "first");
  adds.learn("espejo/a|0|1", () => assert.fail("a second write of the item is not computed again"));
  assert.equal(adds.get("espejo/a|0|1"), "first");
  assert.equal(adds.get("espejo/a|1|1"), undefined);
});

Deno.test("ServerAdds.forgetConfig drops every item and generation of that SyncConfig, and only those", () => {
  const adds = new ServerAdds();
  for (const key of ["espejo/a|0|1", "espejo/a|1|2", "espejo/ab|0|1", "other/a|0|1"]) adds.learn(key, () => key);
  adds.forgetConfig("espejo/a");
  assert.equal(adds.get("espejo/a|0|1"), undefined);
  assert.equal(adds.get("espejo/a|1|2"), undefined);
  assert.equal(adds.get("espejo/ab|0|1"), "espejo/ab|0|1", "a SyncConfig whose name starts alike is kept");
  assert.equal(adds.get("other/a|0|1"), "other/a|0|1");
  assert.equal(adds.size, 2);
});

Deno.test("ServerAdds holds at most its bound: the oldest item goes first", () => {
  const adds = new ServerAdds(2);
  for (const key of ["espejo/a|0|1", "espejo/a|1|1", "espejo/a|2|1"]) adds.learn(key, () => key);
  assert.equal(adds.size, 2);
  assert.equal(adds.get("espejo/a|0|1"), undefined);
  assert.equal(adds.get("espejo/a|2|1"), "espejo/a|2|1");
});
