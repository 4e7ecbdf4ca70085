/**
 * The controller-runtime and client-go metrics (lib/metrics/compat.ts) as a scrape shows them: the names, label names
 * and label values that controller-runtime v0.18.4 and client-go v0.30 served for the Go espejo v0.5.0.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { Metrics } from "../../lib/metrics/metrics.ts";
import { WorkQueue } from "../../lib/controller/queue.ts";
import { PRIORITIES, PRIORITY, type Trigger } from "../../lib/controller/work_items.ts";

const TRIGGERS = Object.keys(PRIORITY) as Trigger[];

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of the text exposition, parsed from the text a scrape gets. */
function scrape(m: Metrics): { samples: Sample[]; types: Map<string, string> } {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const line of m.registry.metrics().split("\n")) {
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type) types.set(type[1], type[2]);
    if (!line || line.startsWith("#")) continue;
    const s = /^([a-z_:]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    assert.ok(s, `a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (s[2] ?? "").matchAll(/([a-z_]+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
    samples.push({ name: s[1], labels, value: Number(s[3]) });
  }
  return { samples, types };
}

/** `name{k="v",...}=value` of every sample of the metric `name` (without histogram buckets), sorted. */
function series(m: Metrics, name: string): string[] {
  return scrape(m).samples.filter((s) => s.name === name).map((s) => {
    const labels = Object.entries(s.labels).sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => `${k}="${v}"`);
    return `{${labels.join(",")}}=${s.value}`;
  }).sort();
}

/** The label names used by the samples of the metric `name` (a histogram: its buckets, sum and count). */
function labelNames(m: Metrics, name: string): string[] {
  const names = new Set<string>();
  const family = (s: Sample) => s.name === name || ["_bucket", "_sum", "_count"].some((x) => s.name === name + x);
  for (const s of scrape(m).samples) if (family(s)) Object.keys(s.labels).forEach((k) => names.add(k));
  return [...names].sort();
}

/** A work queue fed into the metrics as the Controller wires it. */
function wiredQueue(m: Metrics): WorkQueue<string, Trigger> {
  const queue = new WorkQueue<string, Trigger>(PRIORITIES);
  queue.onAdd = (key, tag) => m.compat.added(key, tag);
  return queue;
}

async function take(m: Metrics, queue: WorkQueue<string, Trigger>): Promise<string> {
  const next = await queue.get();
  assert.ok(next);
  m.compat.taken(next.key, next.tag, next.waitedMs / 1000);
  return next.key;
}

Deno.test("ControllerRuntimeMetrics serves the controller-runtime names and types", () => {
  const m = new Metrics();
  m.compat.started(true);
  const { types } = scrape(m);
  assert.deepEqual(
    Object.fromEntries([...types].filter(([name]) => !name.startsWith("espejo_"))),
    {
      controller_runtime_reconcile_total: "counter",
      controller_runtime_reconcile_errors_total: "counter",
      controller_runtime_reconcile_time_seconds: "histogram",
      workqueue_depth: "gauge",
      workqueue_adds_total: "counter",
      workqueue_queue_duration_seconds: "histogram",
      workqueue_work_duration_seconds: "histogram",
      workqueue_retries_total: "counter",
      workqueue_unfinished_work_seconds: "gauge",
      workqueue_longest_running_processor_seconds: "gauge",
      controller_runtime_active_workers: "gauge",
      controller_runtime_max_concurrent_reconciles: "gauge",
      rest_client_requests_total: "counter",
      leader_election_master_status: "gauge",
    },
  );
});

Deno.test("ControllerRuntimeMetrics.started pre-creates the four results of both controllers at 0", () => {
  const m = new Metrics();
  assert.deepEqual(series(m, "controller_runtime_reconcile_total"), [], "nothing before the controllers start");
  m.compat.started(true);
  assert.deepEqual(series(m, "controller_runtime_reconcile_total"), [
    '{controller="namespace",result="error"}=0',
    '{controller="namespace",result="requeue"}=0',
    '{controller="namespace",result="requeue_after"}=0',
    '{controller="namespace",result="success"}=0',
    '{controller="syncconfig",result="error"}=0',
    '{controller="syncconfig",result="requeue"}=0',
    '{controller="syncconfig",result="requeue_after"}=0',
    '{controller="syncconfig",result="success"}=0',
  ]);
  assert.deepEqual(series(m, "controller_runtime_reconcile_errors_total"), [
    '{controller="namespace"}=0',
    '{controller="syncconfig"}=0',
  ]);
  assert.deepEqual(series(m, "workqueue_depth"), ['{name="namespace"}=0', '{name="syncconfig"}=0']);
  assert.deepEqual(series(m, "workqueue_adds_total"), ['{name="namespace"}=0', '{name="syncconfig"}=0']);
});

Deno.test("ControllerRuntimeMetrics counts syncconfig units as requeue_after while passes run, as the Go Reconcile", () => {
  const m = new Metrics();
  m.compat.started(true);
  m.compat.reconciled("interval", false, 0.01);
  m.compat.reconciled("syncconfig", false, 0.01);
  m.compat.reconciled("syncconfig", true, 0.01);
  m.compat.reconciled("namespace", false, 0.01);
  m.compat.reconciled("retry", false, 0.01);
  m.compat.reconciled("retry", true, 0.01);
  assert.deepEqual(series(m, "controller_runtime_reconcile_total").filter((s) => !s.endsWith("=0")), [
    '{controller="namespace",result="error"}=1',
    '{controller="namespace",result="success"}=2',
    '{controller="syncconfig",result="error"}=1',
    '{controller="syncconfig",result="requeue_after"}=2',
  ]);
  assert.deepEqual(series(m, "controller_runtime_reconcile_errors_total"), [
    '{controller="namespace"}=1',
    '{controller="syncconfig"}=1',
  ]);
  assert.deepEqual(series(m, "controller_runtime_reconcile_time_seconds_count"), [
    '{controller="namespace"}=3',
    '{controller="syncconfig"}=3',
  ]);
  // controller-runtime v0.18's buckets.
  const buckets = scrape(m).samples
    .filter((s) => s.name === "controller_runtime_reconcile_time_seconds_bucket" && s.labels.controller === "namespace")
    .map((s) => s.labels.le);
  assert.equal(buckets.length, 41);
  assert.deepEqual([buckets[0], buckets[17], buckets[39], buckets[40]], ["0.005", "1", "60", "+Inf"]);
});

Deno.test("ControllerRuntimeMetrics counts syncconfig units as success without interval passes", () => {
  const m = new Metrics();
  m.compat.started(false);
  m.compat.reconciled("syncconfig", false, 0.01);
  assert.deepEqual(series(m, "controller_runtime_reconcile_total").filter((s) => !s.endsWith("=0")), [
    '{controller="syncconfig",result="success"}=1',
  ]);
});

Deno.test("ControllerRuntimeMetrics: workqueue_* carry only the label name, the controller's", () => {
  const m = new Metrics();
  m.compat.started(true);
  m.compat.added("ns/a", "namespace");
  m.compat.taken("ns/a", "namespace", 0.001);
  m.compat.reconciled("namespace", false, 0.001);
  assert.deepEqual(labelNames(m, "workqueue_depth"), ["name"]);
  assert.deepEqual(labelNames(m, "workqueue_adds_total"), ["name"]);
  assert.deepEqual(labelNames(m, "workqueue_queue_duration_seconds"), ["le", "name"]);
  assert.deepEqual(labelNames(m, "controller_runtime_reconcile_total"), ["controller", "result"]);
  assert.deepEqual(labelNames(m, "controller_runtime_reconcile_errors_total"), ["controller"]);
  assert.deepEqual(labelNames(m, "controller_runtime_reconcile_time_seconds"), ["controller", "le"]);
  for (const s of scrape(m).samples.filter((s) => s.name.startsWith("workqueue_"))) {
    assert.ok(["namespace", "syncconfig"].includes(s.labels.name), `${s.name} name="${s.labels.name}"`);
  }
  // client-go's buckets, ExponentialBuckets(10e-9, 10, 12), spelt as client_golang writes the doubles it multiplies
  // out: the same `le` strings are the same series on Prometheus 2.x.
  const buckets = scrape(m).samples
    .filter((s) => s.name === "workqueue_queue_duration_seconds_bucket" && s.labels.name === "namespace")
    .map((s) => s.labels.le);
  assert.deepEqual(buckets, [
    ...["1e-08", "1e-07", "1e-06", "9.999999999999999e-06", "9.999999999999999e-05", "0.001", "0.01", "0.1", "1"],
    ...["10", "100", "1000", "+Inf"],
  ]);
});

Deno.test("ControllerRuntimeMetrics: workqueue_adds_total counts adds the queue did not absorb, not keys taken", async () => {
  const m = new Metrics();
  m.compat.started(true);
  const queue = wiredQueue(m);
  // Three adds of one waiting key are one add (client-go: the key is dirty); a pass's units count as syncconfig.
  queue.add("ns/a", PRIORITY.namespace, "namespace");
  queue.add("ns/a", PRIORITY.namespace, "namespace");
  queue.add("ns/a", PRIORITY.retry, "retry");
  queue.add("ns/b", PRIORITY.interval, "interval");
  queue.add("cfg/espejo/x", PRIORITY.syncconfig, "syncconfig");
  assert.deepEqual(series(m, "workqueue_adds_total"), ['{name="namespace"}=1', '{name="syncconfig"}=2']);
  assert.deepEqual(series(m, "workqueue_depth"), ['{name="namespace"}=1', '{name="syncconfig"}=2']);
  // Taking keys counts no add; the depth follows.
  assert.equal(await take(m, queue), "ns/a");
  assert.deepEqual(series(m, "workqueue_adds_total"), ['{name="namespace"}=1', '{name="syncconfig"}=2']);
  assert.deepEqual(series(m, "workqueue_depth"), ['{name="namespace"}=0', '{name="syncconfig"}=2']);
  // Added twice while processing: one more add, counted once it waits again.
  queue.add("ns/a", PRIORITY.namespace, "namespace");
  queue.add("ns/a", PRIORITY.namespace, "namespace");
  queue.done("ns/a");
  assert.deepEqual(series(m, "workqueue_adds_total"), ['{name="namespace"}=2', '{name="syncconfig"}=2']);
  assert.deepEqual(series(m, "workqueue_queue_duration_seconds_count"), ['{name="namespace"}=1']);
  // A namespace event promotes the pass's waiting key: no add, and the depth of the controller it was added under
  // goes down when it is taken.
  queue.add("ns/b", PRIORITY.namespace, "namespace");
  assert.deepEqual(series(m, "workqueue_adds_total"), ['{name="namespace"}=2', '{name="syncconfig"}=2']);
  const taken = [await take(m, queue), await take(m, queue), await take(m, queue)];
  assert.deepEqual(taken.sort(), ["cfg/espejo/x", "ns/a", "ns/b"]);
  assert.deepEqual(series(m, "workqueue_depth"), ['{name="namespace"}=0', '{name="syncconfig"}=0']);
  assert.deepEqual(series(m, "workqueue_queue_duration_seconds_count"), [
    '{name="namespace"}=2',
    '{name="syncconfig"}=2',
  ]);
  queue.shutdown();
});

Deno.test("ControllerRuntimeMetrics: rest_client_requests_total and leader_election_master_status as client-go", () => {
  const m = new Metrics();
  m.compat.host = "10.0.0.1:6443";
  m.observeResponse({ method: "GET", path: "/api/v1/namespaces", watch: true, code: 200 });
  m.observeResponse({ method: "GET", path: "/api/v1/namespaces", watch: false, code: 0 });
  m.observeResponse({ method: "PATCH", path: "/api/v1/namespaces/a/configmaps/b", watch: false, code: 409 });
  assert.deepEqual(series(m, "rest_client_requests_total"), [
    '{code="200",host="10.0.0.1:6443",method="GET"}=1',
    '{code="409",host="10.0.0.1:6443",method="PATCH"}=1',
    '{code="<error>",host="10.0.0.1:6443",method="GET"}=1',
  ]);
  m.setLeader(true);
  assert.deepEqual(series(m, "leader_election_master_status"), ['{name="bd39f6a0.appuio.ch"}=1']);
});

Deno.test("ControllerRuntimeMetrics: a standby serves no queue series; the leader starts with the depth waiting", () => {
  const m = new Metrics();
  m.compat.added("syncConfig:a/b", "syncconfig");
  m.compat.added("namespace:x", "namespace");
  assert.deepEqual(series(m, "workqueue_depth"), [], "no controller runs on a standby");
  assert.deepEqual(series(m, "workqueue_adds_total"), []);
  m.compat.started(true);
  assert.deepEqual(series(m, "workqueue_depth"), ['{name="namespace"}=1', '{name="syncconfig"}=1']);
  m.compat.added("namespace:y", "namespace");
  // The keys that waited for the start are adds too: every key taken is one add and one observation.
  assert.deepEqual(series(m, "workqueue_adds_total"), ['{name="namespace"}=2', '{name="syncconfig"}=1']);
  assert.deepEqual(series(m, "workqueue_depth"), ['{name="namespace"}=2', '{name="syncconfig"}=1']);
});

Deno.test("ControllerRuntimeMetrics: adds and queue-duration observations agree once the queue drains, whatever the order", async () => {
  const ops = fc.array(
    fc.record({
      key: fc.constantFrom("ns/a", "ns/b", "cfg/x"),
      trigger: fc.constantFrom(...TRIGGERS),
      take: fc.boolean(),
    }),
    { maxLength: 40 },
  );
  await fc.assert(fc.asyncProperty(ops, fc.integer({ min: 0, max: 40 }), async (steps, startAt) => {
    const m = new Metrics();
    const queue = wiredQueue(m);
    const processing: string[] = [];
    for (const [i, step] of steps.entries()) {
      // Keys may wait before the controllers start (a standby), but only a started controller's workers take them.
      if (i === startAt) m.compat.started(true);
      const started = i >= startAt;
      if (step.take && !started) continue;
      if (step.take && queue.length() > 0) processing.push(await take(m, queue));
      else if (step.take && processing.length) queue.done(processing.shift()!);
      else queue.add(step.key, PRIORITY[step.trigger], step.trigger);
    }
    if (startAt >= steps.length) m.compat.started(true);
    for (;;) {
      for (const key of processing.splice(0)) queue.done(key);
      if (queue.length() === 0) break;
      while (queue.length() > 0) processing.push(await take(m, queue));
    }
    const total = (name: string) =>
      scrape(m).samples.filter((x) => x.name === name).reduce((sum, x) => sum + x.value, 0);
    assert.equal(total("workqueue_queue_duration_seconds_count"), total("workqueue_adds_total"));
    assert.equal(total("workqueue_depth"), 0);
    queue.shutdown();
  }));
});

Deno.test("ControllerRuntimeMetrics: work in progress and its duration, workers and retries, as client-go serves them", () => {
  const m = new Metrics();
  m.compat.started(true, 4);
  assert.deepEqual(series(m, "controller_runtime_max_concurrent_reconciles"), [
    '{controller="namespace"}=4',
    '{controller="syncconfig"}=4',
  ]);
  m.compat.added("ns/a", "retry");
  m.compat.added("ns/b", "namespace");
  m.compat.taken("ns/a", "retry", 0.001);
  m.compat.taken("ns/b", "namespace", 0.001);
  assert.deepEqual(series(m, "controller_runtime_active_workers"), [
    '{controller="namespace"}=2',
    '{controller="syncconfig"}=0',
  ]);
  assert.deepEqual(series(m, "workqueue_retries_total"), ['{name="namespace"}=1', '{name="syncconfig"}=0']);
  const unfinished = scrape(m).samples.find((x) =>
    x.name === "workqueue_unfinished_work_seconds" && x.labels.name === "namespace"
  );
  assert.ok(unfinished && unfinished.value >= 0);
  assert.ok(series(m, "workqueue_longest_running_processor_seconds").length === 2);
  m.compat.finished("ns/a");
  m.compat.finished("ns/b");
  m.compat.finished("ns/b"); // a second done of a key not in progress observes nothing
  assert.deepEqual(series(m, "workqueue_work_duration_seconds_count"), ['{name="namespace"}=2']);
  assert.deepEqual(series(m, "controller_runtime_active_workers"), [
    '{controller="namespace"}=0',
    '{controller="syncconfig"}=0',
  ]);
  assert.deepEqual(series(m, "workqueue_unfinished_work_seconds"), ['{name="namespace"}=0', '{name="syncconfig"}=0']);
});
