/** The books of items between tries (lib/sync/item_books.ts): what each try tells them, and the learning gate. */
import assert from "node:assert/strict";
import { ItemBooks, type Tried } from "../../lib/sync/item_books.ts";
import type { ItemResult } from "../../lib/sync/failures.ts";
import type { CompiledSyncConfig } from "../../lib/model/syncconfig.ts";

const ref = { cfg: { key: "espejo/a" } as CompiledSyncConfig, namespace: "team-a" };
const keys = { retryKey: "espejo/a|s0|team-a", attempt: "1:h:7", fightKey: "/configmaps|team-a/cm" };
const failed = (terminal: boolean): ItemResult => ({ state: "failed", message: "no", terminal });
const tried = (o: Partial<Tried>): Tried => ({
  ref,
  keys,
  outcome: "done",
  restore: false,
  result: failed(false),
  ...o,
});

Deno.test("ItemBooks.afterTry: a failed attempt waits, the same attempt done or found in sync is tried again at once", () => {
  const books = new ItemBooks();
  books.afterTry(tried({ outcome: "transient" }));
  assert.deepEqual(books.view.backedOff(keys.retryKey, keys.attempt), failed(false));
  assert.equal(books.view.backedOff(keys.retryKey, "2:h:7"), undefined, "a new attempt is tried at once");
  books.inSync(keys);
  assert.equal(books.view.backedOff(keys.retryKey, keys.attempt), undefined);
  books.afterTry(tried({ outcome: "terminal", result: failed(true) }));
  assert.deepEqual(books.view.backedOff(keys.retryKey, keys.attempt), failed(true));
  books.forgetNamespace("team-a");
  assert.equal(books.view.backedOff(keys.retryKey, keys.attempt), undefined, "the namespace went: it starts over");
});

Deno.test("ItemBooks.afterTry: restores are the fight's moves, told from the second on; a deleteItem has none", () => {
  const fights: string[] = [];
  const deleted: string[] = [];
  const books = new ItemBooks(10_000, (cfgKey) => fights.push(cfgKey));
  books.afterTry(tried({ restore: true }));
  assert.deepEqual(fights, [], "the first restore is no fight");
  assert.ok(books.view.fightWaitMs(keys.fightKey) > 0, "the next restore waits");
  books.afterTry(tried({ restore: true, outcome: "conflict" }));
  assert.deepEqual(fights, ["espejo/a"], "a conflict on a restore is a move too");
  const deleting = new ItemBooks(10_000, (cfgKey) => deleted.push(cfgKey));
  deleting.afterTry(tried({ keys: { retryKey: keys.retryKey, attempt: keys.attempt }, outcome: "transient" }));
  deleting.afterTry(tried({ keys: { retryKey: keys.retryKey, attempt: "2" }, restore: true }));
  assert.equal(deleting.view.fightWaitMs(keys.fightKey), 0);
  assert.deepEqual(deleted, []);
});

Deno.test("ItemBooks: the learning gate holds an item's other objects until its first unexplained write ends", async () => {
  const books = new ItemBooks();
  let end!: () => void;
  const write = new Promise<void>((r) => (end = r));
  books.learnFrom("espejo/a|0|1", write);
  books.learnFrom("espejo/a|0|1", new Promise(() => {})); // a second is not the learning write
  const gate = books.learning("espejo/a|0|1");
  assert.ok(gate);
  books.learnt("espejo/a|0|1", () => "extras");
  books.learnt("espejo/a|0|1", () => "later");
  assert.equal(books.view.serverAdds("espejo/a|0|1"), "extras", "the first write of the generation is what is learnt");
  end();
  await gate;
  assert.equal(books.learning("espejo/a|0|1"), undefined, "open once the write ended");
  books.forgetConfig("espejo/a");
  assert.equal(books.view.serverAdds("espejo/a|0|1"), undefined);
});
