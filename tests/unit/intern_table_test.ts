/** One numbered copy of each repeated marker, bounded (lib/sync/intern_table.ts). */
import assert from "node:assert/strict";
import { InternTable } from "../../lib/sync/intern_table.ts";

Deno.test("InternTable: equal strings get one copy and one number; the number names the string", () => {
  const t = new InternTable(10);
  const a = t.intern(["espejo", "a"].join("/"));
  assert.equal(t.intern("espejo/a"), a);
  assert.equal(t.indexOf("espejo/a"), 0);
  assert.equal(t.indexOf("espejo/b"), 1);
  assert.equal(t.at(1), "espejo/b");
  assert.equal(t.size, 2);
});

Deno.test("InternTable: past its bound a new string has no number and is its own copy (anyone can write markers)", () => {
  const t = new InternTable(3);
  for (let i = 0; i < 100; i++) t.intern(`tenant-${i}`);
  assert.equal(t.size, 3);
  assert.equal(t.indexOf("tenant-50"), undefined);
  assert.equal(t.intern("tenant-50"), "tenant-50");
  assert.equal(t.indexOf("tenant-0"), 0, "the first ones keep their numbers");
});
