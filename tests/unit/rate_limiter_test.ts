import assert from "node:assert/strict";
import fc from "fast-check";
import FakeTimers from "@sinonjs/fake-timers";
import { CLUSTER_FLOW, flowOf, TokenBucket } from "../../lib/kube/rate_limiter.ts";
import { type Clock, withClock } from "./fake_clock.ts";

Deno.test(
  "TokenBucket lets a burst through at once, then qps a second, in arrival order",
  withClock(async (clock) => {
    const bucket = new TokenBucket(10, 2);
    const order: number[] = [];
    const all = [0, 1, 2, 3].map((i) => bucket.take().then(() => order.push(i)));
    await clock.tickAsync(0);
    assert.deepEqual(order, [0, 1], "the burst");
    await clock.tickAsync(100);
    assert.deepEqual(order, [0, 1, 2]);
    await clock.tickAsync(100);
    assert.deepEqual(order, [0, 1, 2, 3]);
    await Promise.all(all);
  }),
);

Deno.test(
  "TokenBucket serves an urgent waiter before the others already waiting",
  withClock(async (clock) => {
    const bucket = new TokenBucket(10, 1);
    const order: string[] = [];
    const all = ["a", "b", "c"].map((k) => bucket.take().then(() => order.push(k)));
    await clock.tickAsync(0);
    all.push(bucket.take(undefined, true).then(() => order.push("status")));
    await clock.tickAsync(1000);
    assert.deepEqual(order, ["a", "status", "b", "c"]);
    await Promise.all(all);
  }),
);

Deno.test(
  "TokenBucket drops an aborted waiter and rejects it with the reason",
  withClock(async (clock) => {
    const bucket = new TokenBucket(10, 1);
    await bucket.take();
    const stop = new AbortController();
    const aborted = bucket.take(stop.signal);
    const next = bucket.take();
    stop.abort(new Error("stopped"));
    await assert.rejects(aborted, /stopped/);
    await clock.tickAsync(100);
    await next; // got the token the aborted one would have had
  }),
);

Deno.test("TokenBucket with qps 0 never waits", async () => {
  const bucket = new TokenBucket(0, 1);
  for (let i = 0; i < 100; i++) await bucket.take();
});

Deno.test("flowOf names the namespace a request acts in, and one flow for everything cluster-level", () => {
  const table: [string, string][] = [
    ["/api/v1/namespaces/a/configmaps/b", "a"],
    ["/api/v1/namespaces/a/configmaps", "a"],
    ["/apis/networking.k8s.io/v1/namespaces/team-x/networkpolicies/deny", "team-x"],
    ["/apis/sync.appuio.ch/v1alpha1/namespaces/espejo/syncconfigs/s/status", "espejo"],
    ["/api/v1/namespaces/a", CLUSTER_FLOW], // the Namespace object itself
    ["/api/v1/namespaces", CLUSTER_FLOW],
    ["/api/v1/configmaps", CLUSTER_FLOW], // a list across namespaces
    ["/apis/rbac.authorization.k8s.io/v1/clusterroles/x", CLUSTER_FLOW],
    ["/apis", CLUSTER_FLOW],
    ["/api/v1/namespaces/a/", CLUSTER_FLOW],
  ];
  for (const [path, flow] of table) assert.equal(flowOf(path), flow, path);
});

Deno.test(
  "TokenBucket serves flows round-robin: a flow with many waiters delays another flow's first request one turn",
  withClock(async (clock) => {
    const bucket = new TokenBucket(10, 1);
    await bucket.take(); // the burst is spent
    const order: string[] = [];
    const take = (flow: string) => bucket.take(undefined, false, flow).then(() => order.push(flow));
    const all = Array.from({ length: 10 }, () => take("tenant"));
    await clock.tickAsync(250); // two of the tenant's are through
    all.push(take("new"), take("new"), take("other"));
    await clock.tickAsync(2000);
    assert.deepEqual(order, [
      ...["tenant", "tenant"], // before the others came
      ...["tenant", "new", "other"], // one turn of the round
      ...["tenant", "new"],
      ...Array(6).fill("tenant"),
    ]);
    await Promise.all(all);
    assert.equal(bucket.flows, 0, "nothing is kept of a flow without waiters");
  }),
);

Deno.test(
  "TokenBucket forgets a flow whose only waiter aborted, and the others keep their turns",
  withClock(async (clock) => {
    const bucket = new TokenBucket(10, 1);
    await bucket.take();
    const stop = new AbortController();
    const order: string[] = [];
    const a = bucket.take(undefined, false, "a").then(() => order.push("a"));
    const gone = bucket.take(stop.signal, false, "b");
    const c = bucket.take(undefined, false, "c").then(() => order.push("c"));
    assert.equal(bucket.flows, 3);
    stop.abort(new Error("stopped"));
    await assert.rejects(gone, /stopped/);
    assert.equal(bucket.flows, 2);
    await clock.tickAsync(200);
    assert.deepEqual(order, ["a", "c"]);
    await Promise.all([a, c]);
    assert.equal(bucket.flows, 0);
  }),
);

/** One arrival of the property below: at `atMs`, `count` requests of flow `flow`. */
interface Arrival {
  atMs: number;
  flow: number;
  count: number;
}

Deno.test(
  "TokenBucket (property): a request that finds its flow without waiters waits one turn of the round at most, " +
    "the rate is the bucket's, and nothing is kept of flows without waiters",
  async () => {
    const arrival = fc.record({
      atMs: fc.integer({ min: 0, max: 3000 }),
      flow: fc.integer({ min: 0, max: 5 }),
      count: fc.integer({ min: 1, max: 30 }),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 100 }),
        fc.integer({ min: 1, max: 10 }),
        fc.array(arrival, { minLength: 1, maxLength: 12 }),
        async (qps, burst, arrivals: Arrival[]) => {
          const clock = FakeTimers.withGlobal(globalThis).install({ toFake: ["setTimeout", "clearTimeout"] });
          try {
            await checkRounds(clock, qps, burst, arrivals);
          } finally {
            clock.uninstall();
          }
        },
      ),
      { numRuns: 200 },
    );
  },
);

type Log = { kind: "arrive"; id: number; flow: number } | { kind: "grant"; id: number; flow: number; atMs: number };

async function checkRounds(clock: Clock, qps: number, burst: number, arrivals: Arrival[]): Promise<void> {
  const bucket = new TokenBucket(qps, burst, () => clock.now);
  const log: Log[] = [];
  const waiting = new Map<number, number>(); // flow -> requests not yet granted
  const granted: Promise<unknown>[] = [];
  let id = 0;
  for (const a of [...arrivals].sort((x, y) => x.atMs - y.atMs)) {
    await clock.tickAsync(a.atMs - clock.now);
    for (let i = 0; i < a.count; i++) {
      const me = id++;
      log.push({ kind: "arrive", id: me, flow: a.flow });
      waiting.set(a.flow, (waiting.get(a.flow) ?? 0) + 1);
      granted.push(
        bucket.take(undefined, false, String(a.flow)).then(() => {
          log.push({ kind: "grant", id: me, flow: a.flow, atMs: clock.now });
          const left = waiting.get(a.flow)! - 1;
          if (left) waiting.set(a.flow, left);
          else waiting.delete(a.flow);
        }),
      );
    }
    // Grants made at once are logged before the next arrival.
    await clock.tickAsync(0);
    assert.ok(bucket.flows <= waiting.size, `${bucket.flows} flows kept, ${waiting.size} with waiters`);
  }
  const total = id;
  await clock.tickAsync(Math.ceil((total / qps) * 1000) + 1000);
  await Promise.all(granted);
  assert.equal(bucket.flows, 0, "no flow kept once every waiter is served");
  // The rate: never more than the burst plus qps a second since the start.
  const grants = log.filter((l) => l.kind === "grant");
  assert.equal(grants.length, total);
  grants.forEach((g, i) => assert.ok(i + 1 <= burst + (g.atMs * qps) / 1000 + 1e-9, `grant ${i + 1} at ${g.atMs} ms`));
  // One turn of the round: between the arrival of a request whose flow had no waiters and its grant, at most one
  // request of each flow that had waiters then, and none of a flow that came later.
  const pending = new Map<number, number>();
  log.forEach((l, at) => {
    if (l.kind === "grant") {
      const left = pending.get(l.flow)! - 1;
      if (left) pending.set(l.flow, left);
      else pending.delete(l.flow);
      return;
    }
    const first = !pending.has(l.flow);
    const before = new Set(pending.keys());
    pending.set(l.flow, (pending.get(l.flow) ?? 0) + 1);
    if (!first) return;
    const mine = log.findIndex((g) => g.kind === "grant" && g.id === l.id);
    const turns = new Map<number, number>();
    for (const g of log.slice(at + 1, mine)) {
      if (g.kind !== "grant") continue;
      assert.ok(before.has(g.flow), `flow ${g.flow}, which came after, went before request ${l.id} of flow ${l.flow}`);
      turns.set(g.flow, (turns.get(g.flow) ?? 0) + 1);
      assert.ok(turns.get(g.flow)! <= 1, `flow ${g.flow} had two turns before request ${l.id} of flow ${l.flow}`);
    }
  });
}
