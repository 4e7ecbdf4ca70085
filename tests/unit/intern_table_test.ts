/** One numbered copy of each repeated marker, bounded (lib/sync/intern_table.ts). */
import assert from "node:assert/strict";
import { InternTable } from "../../lib/sync/intern_table.ts";

Deno.test("InternTable: equal strings get one copy and one number; the number names the string", () => {
  const t = new InternTable(10);
  t.add(["espejo", "a"].join("/"));
  t.add("espejo/b");
  const a = t.intern("espejo/a");
  assert.equal(t.intern("espejo/a"), a);
  assert.equal(t.indexOf("espejo/a"), 0);
  assert.equal(t.indexOf("espejo/b"), 1);
  assert.equal(t.at(1), "espejo/b");
  assert.equal(t.size, 2);
});

Deno.test("InternTable: only what was added is kept, up to its bound", () => {
  const t = new InternTable(3);
  for (let i = 0; i < 100; i++) t.intern(`tenant-${i}`);
  assert.equal(t.size, 0, "looking a value up does not keep it");
  for (let i = 0; i < 100; i++) t.add(`espejo/${i}`);
  assert.equal(t.size, 3);
  assert.equal(t.indexOf("espejo/50"), undefined);
  assert.equal(t.intern("espejo/50"), "espejo/50");
  assert.equal(t.indexOf("espejo/0"), 0, "the first ones keep their numbers");
});
