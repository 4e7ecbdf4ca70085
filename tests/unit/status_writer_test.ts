/**
 * StatusWriter's conflict handling with a recording client (no server): a status patch carries the resourceVersion it
 * was computed from; a conflict costs one GET and one more patch computed from that copy, never a loop.
 */
import assert from "node:assert/strict";
import FakeTimers from "@sinonjs/fake-timers";
import type { KubeClient, KubeRequest } from "../../lib/kube/client.ts";
import { ApiError } from "../../lib/kube/errors.ts";
import { EventRecorder } from "../../lib/kube/events.ts";
import { Reflector } from "../../lib/kube/reflector.ts";
import { Metrics } from "../../lib/metrics/metrics.ts";
import { type StatusDeps, StatusWriter } from "../../lib/controller/status_writer.ts";
import { SyncEvents } from "../../lib/controller/sync_events.ts";
import { decodeSyncConfig } from "../../lib/sync/syncconfig_api.ts";
import { compileSyncConfig, type SyncConfig } from "../../lib/model/syncconfig.ts";
import { type SyncConfigStatus, syncedStatus } from "../../lib/model/status.ts";

const KEY = "cfg/broken";
const FOREIGN = {
  type: "Audited",
  status: "True",
  reason: "PolicyChecked",
  message: "written by someone else",
  lastTransitionTime: "2024-01-01T00:00:00Z",
};

function syncConfig(resourceVersion: string, conditions: unknown[] = [], generation = 1): SyncConfig {
  return decodeSyncConfig({
    apiVersion: "sync.appuio.ch/v1alpha1",
    kind: "SyncConfig",
    metadata: { namespace: "cfg", name: "broken", uid: "u-1", resourceVersion, generation },
    spec: { namespaceSelector: { matchNames: ["a("] }, syncItems: [] },
    status: { conditions },
  })!;
}

/** Answers status patches with `patchReplies` in turn (an Error is thrown), GETs with `current`. */
class RecordingClient implements KubeClient {
  readonly requests: KubeRequest[] = [];
  constructor(readonly patchReplies: (SyncConfig | Error)[], readonly current: () => SyncConfig) {}
  request<T>(req: KubeRequest): Promise<T> {
    this.requests.push(req);
    if (req.method === "GET") return Promise.resolve(this.current() as T);
    if (req.path.includes("/events")) return Promise.resolve({} as T); // an Event, or its series' count
    const reply = this.patchReplies.shift() ?? new Error("no reply left");
    return reply instanceof Error ? Promise.reject(reply) : Promise.resolve(reply as T);
  }
  watch(): AsyncIterable<never> {
    return (async function* () {})();
  }
  patches(): KubeRequest[] {
    return this.requests.filter((r) => r.method === "PATCH" && r.path.endsWith("/status"));
  }
}

async function flushOnce(
  client: RecordingClient,
  cached: SyncConfig,
  until: (writer: StatusWriter) => boolean,
  retries: StatusDeps["retries"] = { addRateLimited: () => 0, forget: () => {} },
): Promise<void> {
  const syncConfigs = new Reflector<SyncConfig>(client, { path: "/unused", decode: decodeSyncConfig });
  syncConfigs.upsert(cached);
  const writer = new StatusWriter({
    client,
    syncConfigs,
    compiled: () => ({ generation: 1, result: { ok: false, key: KEY, message: `SyncConfig ${KEY}: a bad pattern` } }),
    total: () => ({ synced: 0, deleted: 0, failed: 0, errors: [] }),
    events: new SyncEvents(new EventRecorder(client, { apiVersion: "sync.appuio.ch/v1alpha1", kind: "SyncConfig" })),
    metrics: new Metrics(),
    retries,
  });
  const stop = new AbortController();
  writer.heard({ kind: "changed", cfgKey: KEY });
  const running = writer.run(stop.signal);
  const deadline = Date.now() + 5_000;
  while (!until(writer) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  stop.abort();
  writer.heard({ kind: "stopping" });
  await running;
}

const conflict = () => new ApiError(409, "Conflict", "the object has been modified");

Deno.test("StatusWriter patches with the cached resourceVersion", async () => {
  const client = new RecordingClient([syncConfig("11")], () => syncConfig("10"));
  await flushOnce(client, syncConfig("10"), () => client.patches().length >= 1);
  const [patch] = client.patches();
  assert.deepEqual((patch.body as { metadata: unknown }).metadata, { resourceVersion: "10" });
});

Deno.test("StatusWriter: a conflict costs one GET and one patch from that copy, which keeps its foreign condition", async () => {
  const fresh = syncConfig("12", [FOREIGN]);
  const client = new RecordingClient([conflict(), syncConfig("13")], () => fresh);
  await flushOnce(client, syncConfig("10"), () => client.patches().length >= 2);
  const patches = client.patches();
  assert.equal(patches.length, 2);
  assert.equal(client.requests.filter((r) => r.method === "GET").length, 1);
  const second = patches[1].body as {
    metadata: { resourceVersion: string };
    status: { conditions: { type: string }[] };
  };
  assert.equal(second.metadata.resourceVersion, "12");
  assert.ok(second.status.conditions.some((c) => c.type === "Audited"), "the condition written meanwhile is kept");
  assert.ok(second.status.conditions.some((c) => c.type === "Invalid"));
});

Deno.test("StatusWriter: a second conflict waits for the next flush instead of looping", async () => {
  const client = new RecordingClient([conflict(), conflict(), conflict()], () => syncConfig("12"));
  let settled = 0;
  let patchesThen = 0;
  let readsThen = 0;
  await flushOnce(client, syncConfig("10"), () => {
    patchesThen = client.patches().length;
    readsThen = client.requests.filter((r) => r.method === "GET").length;
    return patchesThen >= 2 && ++settled > 20;
  });
  assert.equal(patchesThen, 2, "two patches in the first 200 ms, not a loop");
  assert.equal(readsThen, 1);
});

Deno.test("StatusWriter: a failed write comes back by the queue's back-off; one that goes through forgets it", async () => {
  const client = new RecordingClient(
    [new ApiError(500, "InternalError", "etcd is slow"), syncConfig("11")],
    () => syncConfig("11"),
  );
  const asked: string[] = [];
  let released = false;
  await flushOnce(client, syncConfig("10"), (writer) => {
    // Held until the queue hands its key out (tests/unit/status_schedule_test.ts): here, at once.
    if (asked.length === 1 && !released) {
      released = true;
      writer.heard({ kind: "retryDue", cfgKey: KEY });
    }
    return client.patches().length >= 2 && asked.includes(`forget status/${KEY}`);
  }, {
    addRateLimited: (key, priority, { baseMs }, tag) => (asked.push(`backoff ${key} p${priority} ${tag} ${baseMs}`), 0),
    forget: (key) => void asked.push(`forget ${key}`),
  });
  assert.deepEqual(asked, [`backoff status/${KEY} p0 retry 2000`, `forget status/${KEY}`]);
  assert.equal(client.patches().length, 2);
});

Deno.test("StatusWriter: after a conflict, a new generation is not written over; its watch event recomputes", async () => {
  const client = new RecordingClient([conflict()], () => syncConfig("12", [], 2));
  let settled = 0;
  await flushOnce(client, syncConfig("10"), () => client.requests.some((r) => r.method === "GET") && ++settled > 10);
  assert.equal(client.patches().length, 1);
});

/** A writer that is never run: what callers tell it, seen through the namespaces it waits for. */
const idleWriter = () => new StatusWriter({} as ConstructorParameters<typeof StatusWriter>[0]);

Deno.test("StatusWriter: a queued namespace is pending for its SyncConfigs until its unit finishes", () => {
  const writer = idleWriter();
  writer.heard({ kind: "queued", cfgKeys: ["espejo/a", "espejo/b"], namespace: "team-a" });
  writer.heard({ kind: "queued", cfgKeys: ["espejo/a"], namespace: "team-b" });
  writer.heard({ kind: "finished", namespace: "team-a" });
  assert.equal(writer.pendingOf("espejo/a"), 1);
  assert.equal(writer.pendingOf("espejo/b"), 0);
});

Deno.test("StatusWriter: an Invalid SyncConfig waits for none of its queued work; a valid one still does", () => {
  const writer = idleWriter();
  writer.heard({ kind: "queued", cfgKeys: ["espejo/bad", "espejo/good"], namespace: "team-a" });
  writer.heard({ kind: "compiled", cfgKey: "espejo/bad", valid: false });
  writer.heard({ kind: "compiled", cfgKey: "espejo/good", valid: true });
  assert.equal(writer.pendingOf("espejo/bad"), 0);
  assert.equal(writer.pendingOf("espejo/good"), 1);
});

Deno.test("StatusWriter.forgetConfig: nothing of a SyncConfig that went is pending", () => {
  const writer = idleWriter();
  writer.heard({ kind: "queued", cfgKeys: ["espejo/gone", "espejo/kept"], namespace: "team-a" });
  writer.forgetConfig("espejo/gone");
  assert.equal(writer.pendingOf("espejo/gone"), 0);
  assert.equal(writer.pendingOf("espejo/kept"), 1);
});

/** A SyncConfig of generation 2 whose stored status is generation 1's, as after an edit; replies echo the patch. */
class EchoClient implements KubeClient {
  readonly statuses: SyncConfigStatus[] = [];
  request<T>(req: KubeRequest): Promise<T> {
    if (!req.path.endsWith("/status")) return Promise.resolve({} as T);
    const { status } = req.body as { status: SyncConfigStatus };
    this.statuses.push(status);
    return Promise.resolve(edited(String(this.statuses.length + 20), status) as T);
  }
  watch(): AsyncIterable<never> {
    return (async function* () {})();
  }
}

function edited(resourceVersion: string, status: SyncConfigStatus): SyncConfig {
  return decodeSyncConfig({
    apiVersion: "sync.appuio.ch/v1alpha1",
    kind: "SyncConfig",
    metadata: { namespace: "cfg", name: "big", uid: "u-2", resourceVersion, generation: 2 },
    spec: {
      namespaceSelector: { matchNames: ["team-.*"] },
      syncItems: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "x" } }],
    },
    status,
  })!;
}

Deno.test(
  "StatusWriter: a status held a minute by its generation's burst is a progress report; the burst's end settles it",
  async () => {
    const clock = FakeTimers.withGlobal(globalThis).install({ toFake: ["setTimeout", "clearTimeout", "performance"] });
    const stop = new AbortController();
    try {
      const client = new EchoClient();
      const syncConfigs = new Reflector<SyncConfig>(client, { path: "/unused", decode: decodeSyncConfig });
      const before = syncedStatus(
        undefined,
        { synced: 3, deleted: 0, failed: 0, errors: [] },
        "2024-01-01T00:00:00Z",
        1,
      );
      const sc = edited("20", before);
      syncConfigs.upsert(sc);
      let synced = 3;
      const writer = new StatusWriter({
        client,
        syncConfigs,
        compiled: () => ({ generation: 2, result: compileSyncConfig(sc) }),
        total: () => ({ synced, deleted: 0, failed: 0, errors: [] }),
        events: new SyncEvents(
          new EventRecorder(client, { apiVersion: "sync.appuio.ch/v1alpha1", kind: "SyncConfig" }),
        ),
        metrics: new Metrics(),
        retries: { addRateLimited: () => 0, forget: () => {} },
      });
      const running = writer.run(stop.signal);
      writer.heard({ kind: "queued", cfgKeys: ["cfg/big"], namespace: "team-a" });
      writer.heard({ kind: "queued", cfgKeys: ["cfg/big"], namespace: "team-b" });
      synced = 4;
      writer.heard({ kind: "changed", cfgKey: "cfg/big" });
      await clock.tickAsync(30_000);
      assert.equal(client.statuses.length, 0, "held while its own work goes on");
      await clock.tickAsync(31_000);
      assert.equal(client.statuses.length, 1, "written once the hold is over");
      const progress = client.statuses[0];
      assert.equal(progress.synchronizedItemCount, 4);
      assert.deepEqual(progress.conditions?.map((c) => [c.type, c.status, c.observedGeneration]), [
        ["Ready", "True", 1],
        ["Reconciling", "True", 2],
      ]);
      synced = 5;
      writer.heard({ kind: "finished", namespace: "team-a" });
      writer.heard({ kind: "finished", namespace: "team-b" });
      await clock.tickAsync(2_000);
      assert.equal(client.statuses.length, 2);
      assert.deepEqual(client.statuses[1].conditions?.map((c) => [c.type, c.status, c.observedGeneration]), [
        ["Ready", "True", 2],
      ]);
      assert.equal(client.statuses[1].synchronizedItemCount, 5);
      // More work of the synced generation (namespace events) held as long: counts move, Ready stays generation 2's.
      writer.heard({ kind: "queued", cfgKeys: ["cfg/big"], namespace: "team-c" });
      synced = 6;
      writer.heard({ kind: "changed", cfgKey: "cfg/big" });
      await clock.tickAsync(61_000);
      assert.equal(client.statuses.length, 3);
      assert.deepEqual(client.statuses[2].conditions?.map((c) => [c.type, c.status, c.observedGeneration]), [
        ["Ready", "True", 2],
      ]);
      stop.abort();
      writer.heard({ kind: "stopping" });
      await clock.tickAsync(1_000);
      await running;
    } finally {
      clock.uninstall();
    }
  },
);
