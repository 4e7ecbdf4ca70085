/**
 * Turns at the work on large objects (lib/sync/large_gate.ts): no one waits for another namespace's turn, the items
 * of the namespace holding it go one after another, and the turn is offered to the namespaces in line in order.
 */
import assert from "node:assert/strict";
import { LargeGate } from "../../lib/sync/large_gate.ts";

/**
 * A script of calls. An item of namespace a runs its large work through the gate: `a+` it must start at once, `a>` it
 * must wait behind a's items before it, `a-` it must be left for later. `done a` ends the oldest running work of a,
 * `fail a` fails it; `began a`, `ended a`, `forget a` as named; `offers b c` checks the offers made so far.
 */
interface Case {
  name: string;
  steps: string[];
  /** The namespaces offered the turn, in order. */
  offers: string[];
  /** `waiting` at the end. */
  waiting: string[];
}

const cases: Case[] = [
  {
    name: "a free turn is taken at once, and passes to no one when no one is in line",
    steps: ["a+", "done a", "b+", "done b"],
    offers: [],
    waiting: [],
  },
  {
    name: "a namespace that finds another's turn is in line, and offered the turn when it is free",
    steps: ["a+", "b-", "offers", "done a"],
    offers: ["b"],
    waiting: ["b"],
  },
  {
    name: "a turn kept for one namespace is refused to others, which are in line after it",
    steps: ["a+", "b-", "done a", "c-", "a-", "b+", "done b"],
    offers: ["b", "c"],
    waiting: ["c", "a"],
  },
  {
    name: "a namespace is in line once, in the place it first came to",
    steps: ["a+", "b-", "c-", "b-", "done a"],
    offers: ["b"],
    waiting: ["b", "c"],
  },
  {
    name: "the items of the namespace holding the turn go one after another before the turn passes on",
    steps: ["a+", "b-", "a>", "a>", "done a", "offers", "done a", "offers", "done a"],
    offers: ["b"],
    waiting: ["b"],
  },
  {
    name: "a failed item passes the turn on as a done one does",
    steps: ["a+", "a>", "b-", "fail a", "fail a"],
    offers: ["b"],
    waiting: ["b"],
  },
  {
    name: "a unit that began after the offer and ended without taking the turn passes it on",
    steps: ["a+", "b-", "c-", "done a", "began b", "ended b"],
    offers: ["b", "c"],
    waiting: ["c"],
  },
  {
    name: "a turn offered while a unit of the namespace ran is kept for its next unit",
    steps: ["a+", "began b", "b-", "done a", "ended b", "c-", "began b", "b+"],
    offers: ["b"],
    waiting: ["c"],
  },
  {
    name: "a unit of a namespace the turn is not kept for changes nothing when it begins and ends",
    steps: ["a+", "b-", "done a", "began c", "ended c", "c-"],
    offers: ["b"],
    waiting: ["b", "c"],
  },
  {
    name: "a forgotten namespace leaves the line, and a turn kept for it passes on",
    steps: ["a+", "b-", "c-", "d-", "forget c", "done a", "forget b"],
    offers: ["b", "d"],
    waiting: ["d"],
  },
];

/** Lets every promise settled by now run its callbacks. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

for (const c of cases) {
  Deno.test(`LargeGate: ${c.name}`, async () => {
    const offers: string[] = [];
    const gate = new LargeGate((ns) => offers.push(ns));
    /** Per namespace, how to end its running items, oldest first. */
    const running = new Map<string, { done: () => void; fail: () => void }[]>();
    const left: Promise<unknown>[] = [];
    for (const step of c.steps) {
      const where = `${step} in ${c.steps.join(", ")}`;
      const item = step.match(/^(\w+)([+>-])$/);
      if (item) {
        const [, ns, how] = item;
        let started = false;
        const result = gate.tryRun(ns, () => {
          started = true;
          return new Promise<void>((done, fail) => {
            running.set(ns, [...running.get(ns) ?? [], { done, fail: () => fail(new Error("refused")) }]);
          });
        });
        left.push(result.catch(() => {}));
        assert.equal(started, how === "+", `${where}: started at once`);
        if (how === "-") assert.equal(await result, undefined, `${where}: left for later`);
        continue;
      }
      const [verb, ...names] = step.split(" ");
      const ns = names[0];
      if (verb === "done" || verb === "fail") {
        const first = running.get(ns)?.shift();
        assert.ok(first, `${where}: an item of ${ns} runs`);
        first[verb]();
        await settle();
      } else if (verb === "offers") assert.deepEqual(offers, names, where);
      else if (verb === "began") gate.began(ns);
      else if (verb === "ended") gate.ended(ns);
      else if (verb === "forget") gate.forget(ns);
      else throw new Error(`unknown step ${step}`);
    }
    assert.deepEqual(offers, c.offers, "offers");
    assert.deepEqual(gate.waiting, c.waiting, "waiting");
    for (const items of running.values()) for (const item of items) item.done();
    await Promise.all(left);
  });
}

Deno.test("LargeGate.tryRun gives the task's value, or its failure, and runs one task at a time", async () => {
  const gate = new LargeGate();
  let inFlight = 0;
  let most = 0;
  const task = (value: number) => async () => {
    most = Math.max(most, ++inFlight);
    await settle();
    inFlight--;
    if (value < 0) throw new Error(`task ${value}`);
    return value;
  };
  const runs = [gate.tryRun("a", task(1)), gate.tryRun("a", task(-2)), gate.tryRun("a", task(3))];
  assert.deepEqual(await runs[0], { value: 1 });
  await assert.rejects(runs[1], /task -2/);
  assert.deepEqual(await runs[2], { value: 3 });
  assert.equal(most, 1);
  assert.deepEqual(await gate.tryRun("b", task(4)), { value: 4 }, "free again");
});

Deno.test("LargeGate: every namespace in line gets the turn, in the order they came", async () => {
  const offers: string[] = [];
  const gate = new LargeGate((ns) => offers.push(ns));
  const namespaces = Array.from({ length: 20 }, (_, i) => `ns-${i}`);
  let end!: () => void;
  const first = gate.tryRun("first", () => new Promise<void>((resolve) => (end = resolve)));
  for (const ns of namespaces) assert.equal(await gate.tryRun(ns, () => Promise.resolve()), undefined);
  end();
  await first;
  const served: string[] = [];
  while (offers.length > served.length) {
    const next = offers[served.length];
    gate.began(next);
    // The others still in line try again meanwhile: refused, in their places.
    for (const other of namespaces) {
      if (other !== next && !served.includes(other)) {
        assert.equal(await gate.tryRun(other, () => Promise.resolve()), undefined);
      }
    }
    assert.ok(await gate.tryRun(next, () => Promise.resolve()), `${next} takes the turn kept for it`);
    served.push(next);
    gate.ended(next);
  }
  assert.deepEqual(served, namespaces);
  assert.deepEqual(gate.waiting, []);
});
