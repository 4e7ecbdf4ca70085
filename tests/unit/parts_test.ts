/**
 * The controller's parts (lib/controller/parts.ts) are built once, at construction: nothing is asked of the API
 * server before the controller runs, and every book of per-key state is registered by then.
 */
import assert from "node:assert/strict";
import type { KubeClient } from "../../lib/kube/client.ts";
import { Controller } from "../../lib/controller/controller.ts";
import { Metrics } from "../../lib/metrics/metrics.ts";

/** A client that records every request it is asked for, and answers none. */
function recordingClient() {
  const asked: string[] = [];
  const client: KubeClient = {
    request: (req) => (asked.push(`${req.method} ${req.path}`), Promise.reject(new Error("no server"))),
    watch: (path) => (asked.push(`WATCH ${path}`), (async function* () {})()),
  };
  return { client, asked };
}

Deno.test("Controller: its parts are built at construction without a request, and hold nothing yet", () => {
  const { client, asked } = recordingClient();
  const controller = new Controller({
    client,
    watchNamespace: "espejo",
    reconcileIntervalMs: 60_000,
    metrics: new Metrics(),
  });
  assert.deepEqual(asked, []);
  assert.equal(controller.retainedContentBytes(), 0);
  assert.equal(controller.idleForMs, 0, "a controller that is not running is not wedged");
  assert.equal(controller.queue.length(), 0);
  assert.equal(controller.ready, false);
});
