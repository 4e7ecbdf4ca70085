/** The bench's line charts (bench/charts.ts): one path per series, axes scaled to round maxima. */
import assert from "node:assert/strict";
import { lineChart } from "../../bench/charts.ts";
import { memoryMiB, requestsPerSecond } from "../../bench/timeline.ts";

Deno.test("lineChart draws one path per series and labels each", () => {
  const svg = lineChart("t", "s", "req/s", [
    { label: "N=100", color: "#111", points: [[0, 0], [10, 40], [20, 3]] },
    { label: "N=1000", color: "#222", points: [[0, 0], [30, 170]] },
  ]);
  assert.match(svg, /^<svg [^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/);
  assert.equal(svg.match(/<path /g)?.length, 2);
  assert.match(svg, />N=100</);
  assert.match(svg, />N=1000</);
  assert.match(svg, />200</, "the y axis goes to the round maximum above 170");
  assert.doesNotMatch(svg, />500</, "not further");
  assert.ok(svg.trimEnd().endsWith("</svg>"));
});

Deno.test("lineChart: no points, no path, and no NaN anywhere", () => {
  const svg = lineChart("t", "s", "MiB", [{ label: "empty", color: "#111", points: [] }]);
  assert.equal(svg.match(/<path /g), null);
  assert.doesNotMatch(svg, /NaN|Infinity/);
});

Deno.test("requestsPerSecond: 5 s buckets from the start, empty ones included, up to the end given", () => {
  const start = 1_000_000;
  const at = (s: number) => start + s * 1000;
  assert.deepEqual(requestsPerSecond([at(0), at(1), at(4.9), at(12)], start, 16), [
    [0, 0.6],
    [5, 0],
    [10, 0.2],
    [15, 0],
  ]);
  assert.deepEqual(memoryMiB([[at(2), 10240], [at(3), 20480]], start), [[2, 10], [3, 20]]);
});
