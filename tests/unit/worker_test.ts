/**
 * The workers (lib/controller/worker.ts) with recording fakes: the books of a finished unit are kept in one place,
 * and every kind of work comes back by one retry policy.
 */
import assert from "node:assert/strict";
import { Freshness } from "../../lib/controller/freshness.ts";
import type { UnitResult } from "../../lib/controller/namespace_unit.ts";
import { PassTracker } from "../../lib/controller/pass.ts";
import { StatusLedger } from "../../lib/controller/status_ledger.ts";
import { Workers } from "../../lib/controller/worker.ts";
import type { Trigger } from "../../lib/controller/work_items.ts";
import { Metrics } from "../../lib/metrics/metrics.ts";
import type { WorkFacts } from "../../lib/sync/retry_policy.ts";

type Work = UnitResult | WorkFacts | Error;

/** Workers over a queue that hands out `keys` once, then stops; each key's work answers from `answers`. */
async function runWorkers(keys: [string, Trigger][], answers: Record<string, Work>) {
  const todo = [...keys];
  const requeued: string[] = [];
  const forgotten: string[] = [];
  const retried: string[] = [];
  const done: string[] = [];
  const ledger = new StatusLedger();
  ledger.track("espejo/a");
  const freshness = new Freshness(600_000);
  const metrics = new Metrics();
  const answer = <T>(key: string): Promise<T> => {
    const a = answers[key];
    return a instanceof Error ? Promise.reject(a) : Promise.resolve(a as T);
  };
  const workers = new Workers({
    queue: {
      get: () => {
        const next = todo.shift();
        return Promise.resolve(next && { key: next[0], priority: 0, tag: next[1], waitedMs: 0 });
      },
      done: (key) => done.push(key),
      addAfter: (key, priority, ms, tag) => requeued.push(`${key} p${priority} ${tag} after ${ms}`),
      addRateLimited: (key, priority, { baseMs, capMs }, tag) => {
        requeued.push(`${key} p${priority} ${tag} backoff from ${baseMs}${capMs === undefined ? "" : ` to ${capMs}`}`);
        return 0;
      },
      forget: (key) => void forgotten.push(key),
      get idle() {
        return todo.length === 0;
      },
    },
    units: { run: (name) => answer(`ns/${name}`) },
    configs: { process: (key) => answer(`cfg/${key}`) },
    finalizer: { settle: (key) => answer(`prune/${key}`) },
    ledger,
    statusWriter: { heard: (f) => void (f.kind === "retryDue" && retried.push(f.cfgKey)) },
    freshness,
    pass: new PassTracker(() => {}),
    metrics,
  });
  await workers.run(1);
  const syncs = metrics.registry.values("espejo_syncs_total").map((v) => `${v.labels.trigger} ${v.labels.result}`);
  return { requeued, forgotten, retried, done, ledger, freshness, syncs };
}

const unitResult = (o: Partial<UnitResult> = {}): UnitResult => ({
  wrote: false,
  retry: false,
  failed: false,
  configs: [],
  unselected: [],
  ...o,
});

Deno.test("Workers: a unit's counts go into the ledger, and a unit that did nothing makes its namespace fresh", async () => {
  const outcome = { synced: 2, deleted: 0, failed: 0, errors: [] };
  const r = await runWorkers([["ns/team-a", "namespace"]], {
    "ns/team-a": unitResult({ configs: [{ cfgKey: "espejo/a", outcome, details: [] }] }),
  });
  assert.deepEqual([...r.ledger.outcomes("espejo/a")], [outcome]);
  assert.equal(r.freshness.isFresh("team-a", Date.now()), true);
  assert.deepEqual(r.requeued, []);
  assert.deepEqual(r.done, ["ns/team-a"]);
  assert.deepEqual(r.syncs, ["namespace success"]);
});

Deno.test("Workers: every kind of work comes back by the one retry policy", async () => {
  const r = await runWorkers([
    ["ns/held", "namespace"],
    ["ns/transient", "interval"],
    ["ns/bug", "namespace"],
    ["cfg/espejo/bug", "syncconfig"],
    ["cfg/espejo/settling", "syncconfig"],
    ["prune/espejo/left", "syncconfig"],
    ["ns/fighting", "namespace"],
    ["status/espejo/a", "retry"],
  ], {
    "ns/held": unitResult({ retryInMs: 3000 }),
    "ns/transient": unitResult({ retry: true, failed: true }),
    "ns/bug": new Error("boom"),
    "cfg/espejo/bug": new Error("boom"),
    "cfg/espejo/settling": { retry: true, baseMs: 1000 },
    "prune/espejo/left": { retry: true, baseMs: 5000 },
    "ns/fighting": unitResult({ retry: true, failed: true, retryInMs: 2000 }),
  });
  // The queue backs off (tests/unit/queue_test.ts): the workers only say from what, and forget what succeeded.
  assert.deepEqual(r.requeued, [
    "ns/held p0 retry after 3000",
    "ns/transient p0 retry backoff from 1000",
    "ns/bug p0 retry backoff from 1000",
    "cfg/espejo/bug p0 retry backoff from 1000",
    // A settle left to try again is retried as pruning's own item: not the SyncConfig's, which queues its namespaces.
    "prune/espejo/settling p0 retry backoff from 1000",
    "prune/espejo/left p0 retry backoff from 5000",
    "ns/fighting p0 retry backoff from 1000 to 2000",
  ]);
  assert.deepEqual(r.forgotten, ["ns/held", "cfg/espejo/settling"], "what needs no back-off starts it over");
  // A status write due again is the writer's: it forgets its count only once a write went through.
  assert.deepEqual(r.retried, ["espejo/a"]);
  assert.deepEqual(r.syncs.sort(), ["interval failed", "namespace failed", "namespace success"]);
  assert.equal(r.freshness.isFresh("held", Date.now()), false, "a unit that must come back is not fresh");
});

Deno.test("Workers: a unit with an item waiting for its turn at large objects is not fresh, and sets no timer", async () => {
  const r = await runWorkers([["ns/waiting", "namespace"]], { "ns/waiting": unitResult({ waiting: true }) });
  assert.equal(r.freshness.isFresh("waiting", Date.now()), false, "a pass looks at it again");
  assert.deepEqual(r.requeued, [], "the turn queues it when it comes");
  assert.deepEqual(r.forgotten, ["ns/waiting"]);
});
