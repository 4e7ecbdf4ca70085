/** Namespaces whose trimmed labels lack a key some SyncConfig reads are read again (lib/controller/trimmed_labels.ts). */
import assert from "node:assert/strict";
import { TrimmedLabels } from "../../lib/controller/trimmed_labels.ts";
import { ApiError } from "../../lib/kube/errors.ts";
import type { KubeClient } from "../../lib/kube/client.ts";
import type { KubeObject } from "../../lib/kube/objects.ts";
import { LabelKeys } from "../../lib/model/label_keys.ts";
import { type NamespaceInfo, namespaceInfo } from "../../lib/model/namespace_info.ts";
import { Registry } from "../../lib/model/registry.ts";
import type { SyncConfig } from "../../lib/model/syncconfig.ts";

const many = (extra: Record<string, string>) => ({
  ...Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`k${i}`, "v"])),
  ...extra,
});

/** A clock for the sweep's gap: `later` keeps the one scheduled sweep, `advance` moves the time and runs it when due. */
function fakeClock() {
  let now = 0;
  let pending: { at: number; fn: () => void } | undefined;
  return {
    now: () => now,
    later: (fn: () => void, ms: number) => {
      const entry = { at: now + ms, fn };
      pending = entry;
      return () => void (pending === entry && (pending = undefined));
    },
    scheduledAt: () => pending?.at,
    async advance(ms: number) {
      now += ms;
      const due = pending && pending.at <= now ? pending : undefined;
      if (due) {
        pending = undefined;
        due.fn();
      }
      for (let i = 0; i < 10; i++) await Promise.resolve(); // the sweep's reads
    },
  };
}

function world(failing: string[] = [], clock = fakeClock(), signal?: AbortSignal) {
  const keys = new LabelKeys();
  const registry = new Registry<NamespaceInfo>(keys);
  const served = new Map<string, KubeObject>();
  const cache = new Map<string, NamespaceInfo>();
  const gets: string[] = [];
  const reread: string[] = [];
  const decode = (raw: KubeObject) =>
    namespaceInfo(
      { metadata: { name: raw.metadata!.name!, labels: raw.metadata!.labels ?? {} }, status: { phase: "Active" } },
      cache.get(raw.metadata!.name!),
      0,
      keys,
    );
  const add = (name: string, labels: Record<string, string>) => {
    const raw = { metadata: { name, labels } };
    served.set(name, raw);
    cache.set(name, decode(raw));
  };
  const client = {
    request: (req: { path: string }) => {
      const name = req.path.split("/").pop()!;
      gets.push(name);
      if (failing.includes(name)) {
        return Promise.reject(new ApiError(403, "Forbidden", `namespaces "${name}" is forbidden`));
      }
      return Promise.resolve(served.get(name));
    },
  } as unknown as KubeClient;
  const trimmed = new TrimmedLabels(
    client,
    {
      values: () => cache.values(),
      get: (name) => cache.get(name),
      upsert: (raw) => void cache.set((raw as KubeObject).metadata!.name!, decode(raw as KubeObject)),
    },
    registry,
    (name) => reread.push(name),
    { gapMs: 10_000, now: clock.now, later: clock.later, signal },
  );
  const reads = (key: string) =>
    registry.compile(`espejo/${key}`, {
      metadata: { namespace: "espejo", name: key, generation: 1, uid: key },
      spec: {
        namespaceSelector: { labelSelector: { matchLabels: { [key]: "x" } } },
        syncItems: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c" } }],
      },
    } as SyncConfig);
  /** SyncConfig `name` now reads `keys` (a new generation). */
  const edit = (name: string, generation: number, keys: string[]) =>
    registry.compile(`espejo/${name}`, {
      metadata: { namespace: "espejo", name, generation, uid: name },
      spec: {
        namespaceSelector: { labelSelector: { matchExpressions: keys.map((key) => ({ key, operator: "Exists" })) } },
        syncItems: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c" } }],
      },
    } as SyncConfig);
  return { registry, cache, add, trimmed, reads, edit, gets, reread, clock };
}

Deno.test("TrimmedLabels reads again only the namespaces trimmed before a key came, and queues each once known", async () => {
  const w = world();
  w.add("small", { team: "x" });
  w.add("huge", many({ team: "x" }));
  w.reads("team");
  assert.equal(w.registry.labelsKnown(w.cache.get("huge")!), false, "trimmed before any key was read");
  assert.equal(w.registry.labelsKnown(w.cache.get("small")!), true, "kept whole");
  await w.trimmed.refresh();
  assert.deepEqual(w.gets, ["huge"]);
  assert.deepEqual(w.reread, ["huge"]);
  assert.deepEqual(w.cache.get("huge")!.labels, { team: "x" });
  assert.deepEqual(w.registry.selecting(w.cache.get("huge")!), ["espejo/team"]);
  await w.trimmed.refresh();
  assert.deepEqual(w.gets, ["huge"], "nothing stale, nothing read");
});

Deno.test("TrimmedLabels: a failed read is logged, not thrown; the namespace stays unknown and the others are read", async () => {
  const w = world(["denied"]);
  w.add("denied", many({ team: "x" }));
  w.add("fine", many({ team: "x" }));
  w.reads("team");
  await w.trimmed.refresh();
  assert.deepEqual(w.gets.sort(), ["denied", "fine"]);
  assert.deepEqual(w.reread, ["fine"]);
  assert.equal(w.registry.labelsKnown(w.cache.get("denied")!), false);
});

Deno.test("TrimmedLabels.readSoon: asks made while a sweep runs cost no second read", async () => {
  const w = world();
  w.add("huge", many({ team: "x" }));
  w.reads("team");
  await Promise.all([w.trimmed.readSoon("huge"), w.trimmed.readSoon("huge"), w.trimmed.refresh()]);
  assert.deepEqual(w.gets, ["huge"]);
});

Deno.test("TrimmedLabels.refresh: a team's edits with fresh keys cost one read of each trimmed namespace per gap", async () => {
  const w = world();
  w.add("huge-1", many({ team: "x" }));
  w.add("huge-2", many({ team: "x" }));
  w.add("small", { team: "x" });
  w.edit("team", 1, ["fresh-1"]);
  await w.trimmed.refresh();
  assert.deepEqual(w.gets.splice(0).sort(), ["huge-1", "huge-2"], "the first ask sweeps at once");
  for (let generation = 2; generation <= 50; generation++) {
    w.edit("team", generation, [`fresh-${generation}`]);
    assert.equal(w.registry.labelsKnown(w.cache.get("huge-1")!), false, "stale after each edit");
    await w.trimmed.refresh(); // resolves at once within the gap
    await w.clock.advance(100);
  }
  assert.deepEqual(w.gets, [], "49 edits within the gap: no read yet");
  assert.equal(w.clock.scheduledAt(), 10_000, "one sweep, at the gap's end");
  await w.clock.advance(5_100);
  assert.deepEqual(w.gets.splice(0).sort(), ["huge-1", "huge-2"], "one read of each for 49 edits");
  assert.equal(w.registry.labelsKnown(w.cache.get("huge-1")!), true, "read with the keys of the last edit");
  assert.deepEqual(w.reread.slice(-2).sort(), ["huge-1", "huge-2"], "queued once read");
  assert.equal(w.trimmed.scheduled, false);
  await w.clock.advance(10_000);
  w.edit("team", 51, ["fresh-51"]);
  await w.trimmed.refresh();
  assert.deepEqual(w.gets.sort(), ["huge-1", "huge-2"], "after a quiet gap the next ask sweeps at once");
});

Deno.test("TrimmedLabels.refresh: a namespace known again without a read (its missing keys went) is queued, not read", async () => {
  const w = world();
  w.add("huge", many({ team: "x" }));
  w.reads("team");
  await w.trimmed.refresh();
  w.gets.length = 0;
  w.reread.length = 0;
  w.edit("fresh", 1, ["fresh-1"]);
  await w.trimmed.refresh(); // within the gap: scheduled
  w.registry.delete("espejo/fresh");
  assert.equal(w.registry.labelsKnown(w.cache.get("huge")!), true, "the key it lacked went");
  await w.clock.advance(10_000);
  assert.deepEqual(w.gets, [], "no read");
  assert.deepEqual(w.reread, ["huge"], "queued: a SyncConfig's work item may have left it out");
});

Deno.test("TrimmedLabels: a sweep scheduled when the controller stops does not run", async () => {
  const stop = new AbortController();
  const w = world([], fakeClock(), stop.signal);
  w.add("huge", many({ team: "x" }));
  w.reads("team");
  await w.trimmed.refresh();
  w.gets.length = 0;
  w.edit("fresh", 1, ["fresh-1"]);
  await w.trimmed.refresh();
  assert.equal(w.trimmed.scheduled, true);
  stop.abort();
  await w.clock.advance(10_000);
  assert.deepEqual(w.gets, []);
});

Deno.test("TrimmedLabels.readSoon: a unit that finds its namespace stale again within the gap waits for the next sweep", async () => {
  const w = world();
  w.add("huge", many({ team: "x" }));
  w.edit("team", 1, ["fresh-1"]);
  await w.trimmed.readSoon("huge"); // the unit of a stale namespace, after a quiet gap: read at once
  assert.deepEqual(w.gets.splice(0), ["huge"]);
  assert.deepEqual(w.reread.splice(0), ["huge"], "its unit is queued");
  // A team edit came meanwhile: that unit finds it stale again, and again, at every edit.
  for (let generation = 2; generation <= 20; generation++) {
    w.edit("team", generation, [`fresh-${generation}`]);
    await w.trimmed.readSoon("huge");
    await w.clock.advance(100);
  }
  assert.deepEqual(w.gets, [], "no read per edit");
  await w.clock.advance(10_000);
  assert.deepEqual(w.gets, ["huge"], "one read at the gap's end");
  assert.equal(w.registry.labelsKnown(w.cache.get("huge")!), true);
});
