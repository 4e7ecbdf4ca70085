/**
 * A watch's idle watchdog (lib/kube/idle_watchdog.ts), alone and in the reflector: aborts after a quiet spell, never
 * while events arrive.
 */
import assert from "node:assert/strict";
import { IdleWatchdog } from "../../lib/kube/idle_watchdog.ts";
import type { KubeClient } from "../../lib/kube/client.ts";
import { Reflector } from "../../lib/kube/reflector.ts";
import { withClock } from "./fake_clock.ts";

Deno.test(
  "IdleWatchdog: events keep it quiet however long they go on; a quiet spell of idleMs aborts",
  withClock(async (clock) => {
    const dog = new IdleWatchdog(1000);
    for (let i = 0; i < 50; i++) {
      await clock.tickAsync(300);
      dog.arrived();
    }
    assert.equal(dog.signal.aborted, false, "15 s of events every 300 ms");
    await clock.tickAsync(999);
    assert.equal(dog.signal.aborted, false, "999 ms after the last event");
    await clock.tickAsync(1);
    assert.equal(dog.signal.aborted, true, "1000 ms after it");
    dog.stop();
  }),
);

Deno.test(
  "IdleWatchdog: one timer at a time, not one per event; stopped, it aborts nothing",
  withClock(async (clock) => {
    const dog = new IdleWatchdog(1000);
    for (let i = 0; i < 1000; i++) dog.arrived();
    assert.equal(clock.countTimers(), 1);
    dog.stop();
    assert.equal(clock.countTimers(), 0);
    await clock.tickAsync(5000);
    assert.equal(dog.signal.aborted, false);
  }),
);

Deno.test("Reflector: a watch silent for idleTimeoutMs is abandoned and resumed where it was", async () => {
  const watches: Record<string, unknown>[] = [];
  const restarts: string[] = [];
  const client: KubeClient = {
    request: () => Promise.reject(new Error("no request expected")),
    async *watch(_path, query, signal) {
      watches.push({ ...query });
      if (watches.length === 1) {
        yield { type: "ADDED", object: { metadata: { namespace: "ns", name: "a", resourceVersion: "5" } } };
        yield {
          type: "BOOKMARK",
          object: { metadata: { resourceVersion: "7", annotations: { "k8s.io/initial-events-end": "true" } } },
        };
      }
      // Then silent, as a connection a NAT dropped: only the abort ends it.
      await new Promise((resolve) => signal.addEventListener("abort", resolve));
      signal.throwIfAborted();
    },
  };
  const stop = new AbortController();
  const cache = new Reflector<string>(client, {
    path: "/api/v1/configmaps",
    decode: (raw) => raw.metadata?.name,
    idleTimeoutMs: 50,
    onWatchRestart: (reason) => restarts.push(reason),
  });
  try {
    cache.run(stop.signal);
    await cache.synced;
    for (let i = 0; watches.length < 2; i++) {
      assert.ok(i < 5000, `the silent watch is resumed (restarts: ${restarts.join("; ")})`);
      await new Promise((r) => setTimeout(r, 1));
    }
    assert.deepEqual(restarts[0], "no event or bookmark for 0.05s, reconnecting");
    assert.equal(watches[1].resourceVersion, "7", "resumed after the bookmark, not listed again");
    assert.deepEqual([...cache.values()], ["a"]);
  } finally {
    stop.abort();
  }
});
