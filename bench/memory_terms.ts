/**
 * `deno task memory-terms [--namespaces 5000]`: the heap bytes of each per-object and per-namespace term of the
 * controller, measured in this process with the controller's own classes under the shipped V8 flags (lite mode) and
 * a forced garbage collection around each term. Objects are shaped as the API server returns the bench's items
 * (bench/workload.ts), decoded from JSON text as they arrive, so every string is a copy of its own as in the real
 * controller. Prints a Markdown table; the whole-process figures against N come from `deno task bench`.
 */
import { parseArgs } from "node:util";
import { ResourceCaches } from "../lib/sync/resource_caches.ts";
import type { ResourceInfo } from "../lib/kube/discovery.ts";
import type { KubeClient, WatchEvent } from "../lib/kube/client.ts";
import type { KubeObject } from "../lib/kube/objects.ts";
import { acceptWritten, assess, remember } from "../lib/sync/verdict.ts";
import { watchNamespaces, WatchTrouble } from "../lib/controller/watches.ts";
import { Freshness } from "../lib/controller/freshness.ts";
import { StatusLedger } from "../lib/controller/status_ledger.ts";
import { StatusSchedule } from "../lib/controller/status_schedule.ts";
import { Registry } from "../lib/model/registry.ts";
import { LabelKeys } from "../lib/model/label_keys.ts";
import { WorkQueue } from "../lib/controller/queue.ts";
import { PRIORITIES } from "../lib/controller/work_items.ts";
import { Metrics } from "../lib/metrics/metrics.ts";
import { desiredObject, desiredObjectNow } from "../lib/sync/desired.ts";
import { compileSyncConfig, type SyncConfig } from "../lib/model/syncconfig.ts";
import { benchSyncConfig } from "./workload.ts";
import type { NamespaceInfo } from "../lib/model/namespace_info.ts";
import type { ItemCounts as NamespaceOutcome } from "../lib/model/status.ts";

const { values } = parseArgs({ args: Deno.args, options: { namespaces: { type: "string", default: "5000" } } });
const N = Number(values.namespaces);
const M = 5;

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("run with --v8-flags=--expose-gc (deno task memory-terms does)");

function heapUsed(): number {
  for (let i = 0; i < 3; i++) gc!();
  return Deno.memoryUsage().heapUsed;
}

/** Heap bytes per unit that `build` keeps alive, `units` of them. */
async function bytesPer(units: number, build: () => Promise<unknown> | unknown): Promise<number> {
  keep.length = 0;
  await new Promise((resolve) => setTimeout(resolve, 10)); // stopped watches end
  const before = heapUsed();
  const kept = await build();
  const after = heapUsed();
  keep.push(kept);
  return (after - before) / units;
}
const keep: unknown[] = [];

/** A client whose watches deliver `initial` as a WatchList, then stay open; it serves no request. */
function fakeClient(initial: (path: string) => KubeObject[]): KubeClient {
  return {
    request: () => Promise.reject(new Error("no requests here")),
    async *watch(path: string, _q, signal: AbortSignal): AsyncIterable<WatchEvent> {
      // Handed over one at a time and not kept: the measured heap is the cache's, not this list's.
      const objects = initial(path);
      while (objects.length) yield { type: "ADDED", object: objects.shift()! };
      yield {
        type: "BOOKMARK",
        object: { metadata: { resourceVersion: "1000", annotations: { "k8s.io/initial-events-end": "true" } } },
      };
      await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
    },
  };
}

const configMaps: ResourceInfo = {
  resource: "configmaps",
  namespaced: true,
  group: "",
  version: "v1",
  kind: "ConfigMap",
  verbs: ["list", "watch", "create", "update"],
};

const configs = Array.from({ length: M }, (_, i) => {
  const sc = benchSyncConfig(i) as SyncConfig;
  sc.metadata = { ...sc.metadata, namespace: "bench-config", uid: `uid-${i}`, generation: 1 };
  const compiled = compileSyncConfig(sc);
  if (!compiled.ok) throw new Error(compiled.message);
  return compiled.config;
});
const names = Array.from({ length: N }, (_, i) => `bench-${String(i).padStart(5, "0")}`);
let rv = 2000;

/** The server's reply to espejo's create of item `item` of config 0 in `namespace`, as parsed JSON. */
async function reply(namespace: string, item = 0): Promise<{ reply: KubeObject; hash: string }> {
  const { object, hash } = await desiredObject(configs[0], configs[0].syncItems[item], namespace);
  const text = JSON.stringify({
    ...object,
    metadata: {
      ...object.metadata,
      uid: crypto.randomUUID(),
      resourceVersion: String(rv++),
      creationTimestamp: "2026-12-05T10:00:00Z",
      annotations: { ...object.metadata!.annotations, "sync.appuio.ch/created-by": configs[0].key },
      managedFields: [{
        manager: "espejo",
        operation: "Update",
        apiVersion: "v1",
        time: "2026-12-05T10:00:00Z",
        fieldsType: "FieldsV1",
        fieldsV1: { "f:data": { "f:namespace": {}, "f:version": {} } },
      }],
    },
  });
  return { reply: JSON.parse(text), hash };
}

async function managedCache(prunes: boolean, initial: KubeObject[] = []) {
  const stop = new AbortController();
  const caches = new ResourceCaches(fakeClient(() => initial), stop.signal, { prunes: () => prunes });
  const cache = caches.managed(configMaps);
  await cache.synced;
  return { caches, cache, stop };
}

const rows: [string, string][] = [];
const row = (what: string, bytes: number) => rows.push([what, `${Math.round(bytes)}`]);

// A cached object espejo wrote (its reply stored, the watch echo of the same version ignored): the steady state.
// The replies are parsed inside the measurement, as each arrives in the controller, so their strings count.
for (const prunes of [false, true]) {
  // The 4 items of a SyncConfig in each namespace (all in one cache: what it keeps does not depend on the kind).
  const replies = await Promise.all(names.flatMap((ns) => [0, 1, 2, 3].map((i) => reply(ns, i))));
  const texts = replies.map(({ reply, hash }) => ({ text: JSON.stringify(reply), hash }));
  const { cache, stop } = await managedCache(prunes);
  row(
    `managed object written by espejo${prunes ? ", its SyncConfig pruning (created index)" : ""}`,
    await bytesPer(texts.length, () => {
      for (const { text, hash } of texts) {
        const reply = JSON.parse(text) as KubeObject;
        cache.upsert(reply);
        acceptWritten(cache.get(`${reply.metadata!.namespace}/${reply.metadata!.name}`)!, reply, hash);
      }
      return cache;
    }),
  );
  stop.abort();
}

// The same objects read by a restart's WatchList and judged in sync (no baseline: compared by value).
{
  const items = names.flatMap((ns) => [0, 1, 2, 3].map((i) => ({ ns, i })));
  const texts = (await Promise.all(items.map(({ ns, i }) => reply(ns, i)))).map(({ reply }) => JSON.stringify(reply));
  const desired = items.map(({ ns, i }) => desiredObjectNow(configs[0], configs[0].syncItems[i], ns));
  let cacheRef: Awaited<ReturnType<typeof managedCache>> | undefined;
  row(
    "managed object read by a restart's WatchList, judged in sync",
    await bytesPer(items.length, async () => {
      cacheRef = await managedCache(false, texts.map((t) => JSON.parse(t)));
      items.forEach(({ ns }, i) => {
        const name = desired[i].object.metadata!.name;
        const entry = cacheRef!.cache.get(`${ns}/${name}`)!;
        remember(entry, assess(desired[i].object, desired[i].hash, entry).memo);
      });
      await Promise.resolve(); // judged entries are packed once this code has run
      return cacheRef.cache;
    }),
  );
  cacheRef?.stop.abort();
  cacheRef = undefined;
}

// A ConfigMap in the cache of deleteItems candidates (metadata of every object of a kind a deleteItem names).
{
  const texts = names.map((ns) =>
    JSON.stringify({
      apiVersion: "meta.k8s.io/v1",
      kind: "PartialObjectMetadata",
      metadata: { name: "c0-info", namespace: ns, uid: crypto.randomUUID(), resourceVersion: String(rv++) },
    })
  );
  let stop: AbortController | undefined;
  row(
    "object in a deleteItems candidates cache (its metadata)",
    await bytesPer(N, async () => {
      stop = new AbortController();
      const raw = texts.map((t) => JSON.parse(t));
      const caches = new ResourceCaches(fakeClient(() => raw), stop.signal);
      const cache = caches.existing(configMaps);
      await cache.synced;
      return cache;
    }),
  );
  stop?.abort();
}

// A namespace in the namespace cache.
{
  const stop = new AbortController();
  const texts = names.map((name) =>
    JSON.stringify({
      apiVersion: "v1",
      kind: "Namespace",
      metadata: {
        name,
        uid: crypto.randomUUID(),
        resourceVersion: String(rv++),
        labels: { "kubernetes.io/metadata.name": name, "espejo-bench/tenant": "yes" },
      },
      spec: { finalizers: ["kubernetes"] },
      status: { phase: "Active" },
    })
  );
  const raw: KubeObject[] = [];
  const metrics = new Metrics();
  const reflector = watchNamespaces(fakeClient(() => raw), new WatchTrouble(metrics), () => {}, new LabelKeys());
  row(
    "namespace in the namespace cache",
    await bytesPer(N, async () => {
      raw.push(...texts.map((t) => JSON.parse(t)));
      reflector.run(stop.signal);
      await reflector.synced;
      return reflector;
    }),
  );
  const namespaces = [...reflector.values()] as NamespaceInfo[];

  // What the controller keeps per namespace once it is synced: selection, freshness, the status ledger's outcome per
  // selecting SyncConfig.
  const registry = new Registry<NamespaceInfo>();
  configs.forEach((c, i) => {
    const sc = benchSyncConfig(i) as SyncConfig;
    sc.metadata = { ...sc.metadata, namespace: "bench-config", uid: c.uid, generation: 1 };
    registry.compile(c.key, sc);
  });
  row(
    "selection index entry (5 SyncConfigs select it)",
    await bytesPer(N, () => namespaces.map((ns) => registry.selecting(ns))),
  );
  const freshness = new Freshness(600_000);
  row(
    "freshness (changed, then synced without writes)",
    await bytesPer(N, () => {
      for (const ns of names) {
        freshness.changedIn(ns);
        freshness.synced(ns, freshness.begin(), true, Date.now());
      }
      return freshness;
    }),
  );
  const ledger = new StatusLedger();
  for (const c of configs) ledger.track(c.key);
  row(
    "status ledger: 5 SyncConfigs' outcomes",
    await bytesPer(N, () => {
      for (const ns of names) {
        for (const c of configs) {
          const outcome: NamespaceOutcome = { synced: 4, deleted: 0, failed: 0, errors: [] };
          ledger.record(c.key, ns, outcome);
        }
      }
      return ledger;
    }),
  );

  // During a burst (a new SyncConfig over every namespace, or the start): what waits per namespace.
  const queue = new WorkQueue<string, string>(PRIORITIES);
  row(
    "burst: queued namespace key",
    await bytesPer(N, () => {
      for (const ns of names) queue.add(`ns/${ns}`, 1, "syncconfig");
      return queue;
    }),
  );
  const schedule = new StatusSchedule();
  row(
    "burst: status schedule, namespace pending for 5 SyncConfigs",
    await bytesPer(N, () => {
      for (const ns of namespaces) schedule.queued(registry.selecting(ns), ns.name);
      return schedule;
    }),
  );
  // A SyncConfig that writes as a ServiceAccount keeps its identity beside its compile result: the difference of the
  // same SyncConfig compiled with and without the annotation.
  const annotated = (i: number, sa: boolean): SyncConfig => {
    const sc = benchSyncConfig(i) as SyncConfig;
    const metadata = { ...sc.metadata, name: `cfg-${i}`, namespace: `team-${i}` };
    if (sa) metadata.annotations = { ...metadata.annotations, "sync.appuio.ch/service-account": "writer" };
    return { ...sc, metadata };
  };
  const SYNC_CONFIGS = 2000;
  const plain = await bytesPer(SYNC_CONFIGS, () => {
    const r = new Registry<NamespaceInfo>();
    for (let i = 0; i < SYNC_CONFIGS; i++) r.compile(`team-${i}/cfg-${i}`, annotated(i, false));
    return r;
  });
  const withIdentity = await bytesPer(SYNC_CONFIGS, () => {
    const r = new Registry<NamespaceInfo>();
    for (let i = 0; i < SYNC_CONFIGS; i++) r.compile(`team-${i}/cfg-${i}`, annotated(i, true));
    return r;
  });
  row("SyncConfig's identity (a ServiceAccount named), beyond its compile result", withIdentity - plain);
  stop.abort();
}

console.log(
  `Heap bytes per term, N=${N} namespaces, ${M} SyncConfigs (deno ${Deno.version.deno}, ${
    Deno.args.length ? Deno.args.join(" ") : "defaults"
  }):\n`,
);
console.log("| term | bytes each |\n| --- | --- |");
for (const [what, bytes] of rows) console.log(`| ${what} | ${bytes} |`);
Deno.exit(0);
