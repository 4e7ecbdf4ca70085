import assert from "node:assert/strict";
import { FightBook } from "../../lib/sync/fights.ts";

function clock() {
  const c = { ms: 1_000_000, now: () => c.ms };
  return c;
}

Deno.test("FightBook lets the first restore through at once", () => {
  const c = clock();
  const book = new FightBook(3000, c.now);
  assert.equal(book.waitMs("cm/a"), 0);
  assert.equal(book.restored("cm/a"), 1);
});

Deno.test("FightBook doubles the wait between restores of one object, up to the longest delay", () => {
  const c = clock();
  const book = new FightBook(10_000, c.now);
  const waits: number[] = [];
  for (let i = 0; i < 7; i++) {
    const wait = book.waitMs("cm/a");
    waits.push(wait);
    c.ms += wait;
    book.restored("cm/a");
  }
  assert.deepEqual(waits, [0, 1000, 2000, 4000, 8000, 10_000, 10_000]);
});

Deno.test("FightBook: a fight with a writer changing every 0.5 s for 15 s costs a handful of restores", () => {
  const c = clock();
  const book = new FightBook(3000, c.now);
  let restores = 0;
  // The other writer changes the object every 500 ms; espejo restores whenever its wait allows.
  for (let t = 0; t <= 15_000; t += 500) {
    c.ms = 1_000_000 + t;
    if (book.waitMs("cm/a") === 0) {
      book.restored("cm/a");
      restores++;
    }
  }
  assert.ok(restores <= 12, `${restores} restores`);
  assert.ok(restores >= 5, `${restores} restores: the desired content keeps coming back`);
});

Deno.test("FightBook ends a fight after twice the longest delay of quiet", () => {
  const c = clock();
  const book = new FightBook(3000, c.now);
  book.restored("cm/a");
  book.restored("cm/a");
  c.ms += 6001;
  assert.equal(book.waitMs("cm/a"), 0);
  assert.equal(book.restored("cm/a"), 1, "a new fight starts from the first restore");
});

Deno.test("FightBook keeps objects apart and stays bounded", () => {
  const c = clock();
  const book = new FightBook(3000, c.now, 3);
  book.restored("cm/a");
  assert.equal(book.waitMs("cm/b"), 0);
  for (const k of ["b", "c", "d", "e"]) book.restored(`cm/${k}`);
  assert.equal(book.size, 3);
});
