import assert from "node:assert/strict";
import fc from "fast-check";
import { collectDefaultMetrics, Counter, Gauge, goFloat, Histogram, Registry } from "../../lib/metrics/prometheus.ts";

Deno.test("Registry.metrics writes HELP, TYPE and one line per series, labels escaped", () => {
  const registry = new Registry();
  const c = new Counter({
    name: "x_total",
    help: "Things\ncounted",
    labelNames: ["a", "b"] as const,
    registers: [registry],
  });
  c.inc({ b: "2", a: 'q"uo\\te\n' });
  c.inc({ a: 'q"uo\\te\n', b: "2" }, 2);
  c.inc({ a: "other", b: "1" });
  new Gauge({ name: "empty", help: "No series yet", registers: [registry] });
  assert.equal(
    registry.metrics(),
    [
      "# HELP x_total Things\\ncounted",
      "# TYPE x_total counter",
      'x_total{a="q\\"uo\\\\te\\n",b="2"} 3',
      'x_total{a="other",b="1"} 1',
      "# HELP empty No series yet",
      "# TYPE empty gauge",
      "",
    ].join("\n"),
  );
});

Deno.test("Histogram buckets are cumulative, with +Inf, _sum and _count", () => {
  const registry = new Registry();
  const h = new Histogram({
    name: "d_seconds",
    help: "d",
    labelNames: ["t"] as const,
    buckets: [1, 0.1],
    registers: [registry],
  });
  for (const v of [0.05, 0.5, 5]) h.observe({ t: "x" }, v);
  const text = registry.metrics();
  assert.match(text, /^d_seconds_bucket\{t="x",le="0.1"\} 1$/m);
  assert.match(text, /^d_seconds_bucket\{t="x",le="1"\} 2$/m);
  assert.match(text, /^d_seconds_bucket\{t="x",le="\+Inf"\} 3$/m);
  assert.match(text, /^d_seconds_sum\{t="x"\} 5.55$/m);
  assert.match(text, /^d_seconds_count\{t="x"\} 3$/m);
});

Deno.test("Gauge set and remove; Registry.values reads one metric", () => {
  const registry = new Registry();
  const g = new Gauge({ name: "g", help: "g", labelNames: ["k"] as const, registers: [registry] });
  g.set({ k: "a" }, 5);
  g.set({ k: "b" }, 7);
  g.remove({ k: "a" });
  assert.deepEqual(registry.values("g"), [{ labels: { k: "b" }, value: 7 }]);
  assert.deepEqual(registry.values("nope"), []);
  assert.throws(() => new Gauge({ name: "g", help: "again", registers: [registry] }), /registered twice/);
});

Deno.test("collectDefaultMetrics serves the process and heap figures at each scrape", () => {
  const registry = new Registry();
  collectDefaultMetrics(registry);
  const text = registry.metrics();
  for (const name of ["process_resident_memory_bytes", "process_cpu_seconds_total", "nodejs_heap_size_used_bytes"]) {
    const m = new RegExp(`^${name} (\\S+)$`, "m").exec(text);
    assert.ok(m && Number(m[1]) > 0, `${name} in\n${text}`);
  }
  assert.match(text, /^# TYPE process_cpu_seconds_total counter$/m);
});

Deno.test("Labels are written in the declared order, whatever order inc was given", () => {
  const registry = new Registry();
  const c = new Counter({
    name: "r",
    help: "r",
    labelNames: ["verb", "resource", "code"] as const,
    registers: [registry],
  });
  c.inc({ code: "201", verb: "POST", resource: "configmaps" });
  c.inc({ resource: "configmaps", code: "201", verb: "POST" });
  assert.match(registry.metrics(), /^r\{verb="POST",resource="configmaps",code="201"\} 2$/m);
});

Deno.test("Histogram remove forgets the series' buckets too", () => {
  const registry = new Registry();
  const h = new Histogram({ name: "r_seconds", help: "r", labelNames: ["t"] as const, registers: [registry] });
  h.observe({ t: "gone" }, 1);
  h.observe({ t: "kept" }, 1);
  h.remove({ t: "gone" });
  const text = registry.metrics();
  assert.doesNotMatch(text, /t="gone"/);
  assert.match(text, /^r_seconds_count\{t="kept"\} 1$/m);
});

const GO_FLOATS: [number, string][] = [
  // strconv.FormatFloat(v, 'g', -1, 64), as client_golang writes values and bucket bounds
  [1e-8, "1e-08"],
  [5e-5, "5e-05"],
  [0.0001, "0.0001"],
  [0.005, "0.005"],
  [0.25, "0.25"],
  [1, "1"],
  [100000, "100000"],
  [999999, "999999"],
  [1e6, "1e+06"],
  [1234567, "1.234567e+06"],
  [83886080, "8.388608e+07"],
  [1.7e21, "1.7e+21"],
  [-2.5e-7, "-2.5e-07"],
  [0, "0"],
  [NaN, "NaN"],
  [Infinity, "+Inf"],
  [-Infinity, "-Inf"],
];

for (const [v, text] of GO_FLOATS) {
  Deno.test(`goFloat writes ${v} as Go's strconv does: ${text}`, () => assert.equal(goFloat(v), text));
}

Deno.test("goFloat reads back as the same number for any double", () => {
  fc.assert(
    fc.property(
      fc.double({ noNaN: true }),
      (v) => Object.is(Number(goFloat(v).replace("+Inf", "Infinity").replace("-Inf", "-Infinity")), v),
    ),
  );
});

Deno.test('Histogram bucket bounds are written as Go writes them (le="1e-08", not le="1e-8")', () => {
  const registry = new Registry();
  const h = new Histogram({ name: "tiny_seconds", help: "h", buckets: [1e-8, 1e-3, 1e7], registers: [registry] });
  h.observe(1e-9);
  const text = registry.metrics();
  assert.match(text, /^tiny_seconds_bucket\{le="1e-08"\} 1$/m);
  assert.match(text, /^tiny_seconds_bucket\{le="0.001"\} 1$/m);
  assert.match(text, /^tiny_seconds_bucket\{le="1e\+07"\} 1$/m);
});
