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

function world(failing: string[] = []) {
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
  );
  const reads = (key: string) =>
    registry.compile(`espejo/${key}`, {
      metadata: { namespace: "espejo", name: key, generation: 1, uid: key },
      spec: {
        namespaceSelector: { labelSelector: { matchLabels: { [key]: "x" } } },
        syncItems: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c" } }],
      },
    } as SyncConfig);
  return { registry, cache, add, trimmed, reads, gets, reread };
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

Deno.test("TrimmedLabels.readSoon: asks made while a read is under way share it", async () => {
  const w = world();
  w.add("huge", many({ team: "x" }));
  w.reads("team");
  await Promise.all([w.trimmed.readSoon("huge"), w.trimmed.readSoon("huge"), w.trimmed.refresh()]);
  assert.deepEqual(w.gets, ["huge"]);
});
