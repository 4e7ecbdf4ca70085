/** One copy of equal values, bounded (lib/model/value_pool.ts). */
import assert from "node:assert/strict";
import { ValuePool } from "../../lib/model/value_pool.ts";

Deno.test("ValuePool: equal values named by one key share the first copy, frozen", () => {
  const pool = new ValuePool<{ n: number }>();
  const first = pool.shared("1", { n: 1 });
  assert.equal(pool.shared("1", { n: 1 }), first);
  assert.ok(Object.isFrozen(first));
  assert.notEqual(pool.shared("2", { n: 2 }), first);
  assert.equal(pool.size, 2);
});

Deno.test("ValuePool: past its bound a new value is its own copy, and the pool stays at the bound", () => {
  const pool = new ValuePool<{ n: number }>(3);
  for (let i = 0; i < 10; i++) pool.shared(String(i), { n: i });
  assert.equal(pool.size, 3);
  const late = { n: 42 };
  assert.equal(pool.shared("42", late), late);
  assert.equal(pool.shared("42", { n: 42 }) === late, false, "not pooled: a second copy is its own");
  assert.equal(pool.shared("0", { n: 0 }).n, 0);
});
