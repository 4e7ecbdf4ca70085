import assert from "node:assert/strict";
import { ApiError } from "../../lib/kube/errors.ts";
import { Metrics } from "../../lib/metrics/metrics.ts";
import { WatchTrouble } from "../../lib/controller/watches.ts";

const restarts = (m: Metrics) =>
  m.registry.metrics().split("\n").filter((l) => l.startsWith("espejo_watch_restarts_total{")).sort();

Deno.test("WatchTrouble counts failed watches, but not a 403: a missing right is one alert (items or stall), not two", () => {
  const m = new Metrics();
  const trouble = new WatchTrouble(m);
  trouble.failed("configmaps", new ApiError(403, "Forbidden", "configmaps is forbidden"), 800);
  trouble.failed("configmaps", new ApiError(403, "Forbidden", "configmaps is forbidden"), 1600);
  assert.deepEqual(restarts(m), []);
  trouble.failed("namespaces", new ApiError(503, "ServiceUnavailable", "down"), 800);
  trouble.failed("namespaces", new Error("cannot reach the API server at https://x: connection refused"), 1600);
  trouble.restarted("namespaces", "resourceVersion expired (410 Gone), relisting");
  assert.deepEqual(restarts(m), ['espejo_watch_restarts_total{resource="namespaces"} 3']);
});
