import assert from "node:assert/strict";
import {
  MAX_KEPT_LABEL_COUNT,
  MAX_KEPT_LABELS,
  type NamespaceInfo,
  namespaceInfo,
} from "../../lib/model/namespace_info.ts";
import { LabelKeys } from "../../lib/model/label_keys.ts";
import { Registry } from "../../lib/model/registry.ts";
import type { SyncConfig } from "../../lib/model/syncconfig.ts";

const ns = (labels: Record<string, string>, phase = "Active") => ({
  metadata: { name: "t", labels },
  status: { phase },
});

Deno.test("namespaceInfo remembers when the labels last changed, and only then", () => {
  const first = namespaceInfo(ns({ a: "1" }), undefined, 100);
  assert.equal(first.relabelledAt, undefined, "a namespace first seen was not relabelled");
  const same = namespaceInfo(ns({ a: "1" }, "Terminating"), first, 200);
  assert.equal(same.relabelledAt, undefined, "a phase change is no relabel");
  const changed = namespaceInfo(ns({ a: "2" }), same, 300);
  assert.equal(changed.relabelledAt, 300);
  const added = namespaceInfo(ns({ a: "2", b: "x" }), changed, 400);
  assert.equal(added.relabelledAt, 400);
  const kept = namespaceInfo(ns({ b: "x", a: "2" }), added, 500);
  assert.equal(kept.relabelledAt, 400, "the same labels in another order are no change");
  const removed = namespaceInfo(ns({ b: "x" }), kept, 600);
  assert.equal(removed.relabelledAt, 600);
});

/** About 1 MiB of labels a namespace admin may write: 10,000 keys of 63 characters with values of 40. */
const hugeLabels = (extra: Record<string, string>) => ({
  ...Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`k${i}`.padEnd(63, "k"), "v".repeat(40)])),
  ...extra,
});

const keysOf = (...read: string[]) => {
  const keys = new LabelKeys();
  keys.read("espejo/reader", read);
  return keys;
};

Deno.test("namespaceInfo keeps labels up to MAX_KEPT_LABELS whole, and of larger ones only the keys selectors read", () => {
  const keys = keysOf("team");
  const small = { team: "a", "kubernetes.io/metadata.name": "t", "pod-security.kubernetes.io/enforce": "baseline" };
  const kept = namespaceInfo(ns(small), undefined, 1, keys);
  assert.deepEqual(kept.labels, small, "small labels are kept whole: a new SyncConfig's key is already there");
  assert.equal(kept.labelsFor, undefined);
  const huge = namespaceInfo(ns(hugeLabels({ team: "a" })), undefined, 1, keys);
  assert.deepEqual(huge.labels, { team: "a" });
  assert.equal(huge.labelsFor, keys.version);
  assert.ok(JSON.stringify(huge).length < MAX_KEPT_LABELS, "its cost is what selectors read, not what was written");
});

Deno.test("namespaceInfo: a change of a label no selector reads is no relabel of a trimmed namespace", () => {
  const keys = keysOf("team");
  const first = namespaceInfo(ns(hugeLabels({ team: "a", other: "1" })), undefined, 100, keys);
  const other = namespaceInfo(ns(hugeLabels({ team: "a", other: "2" })), first, 200, keys);
  assert.equal(other.relabelledAt, undefined);
  const team = namespaceInfo(ns(hugeLabels({ team: "b", other: "2" })), other, 300, keys);
  assert.equal(team.relabelledAt, 300);
});

Deno.test("Registry: a namespace trimmed before a SyncConfig that reads another key came is not selected by that one, whose selection is unknown", () => {
  const registry = new Registry<NamespaceInfo>();
  const config = (name: string, key: string) => ({
    metadata: { namespace: "espejo", name, generation: 1, uid: name },
    spec: {
      namespaceSelector: { labelSelector: { matchLabels: { [key]: "a" } } },
      syncItems: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "x" } }],
    },
  });
  registry.compile("espejo/team", config("team", "team") as SyncConfig);
  const trimmed = namespaceInfo(ns(hugeLabels({ team: "a", tier: "a" })), undefined, 1, registry.labelKeys);
  assert.deepEqual(registry.selecting(trimmed), ["espejo/team"]);
  registry.compile("espejo/tier", config("tier", "tier") as SyncConfig);
  assert.equal(registry.labelsKnown(trimmed), false, "tier was left out when it was trimmed");
  assert.deepEqual(registry.selecting(trimmed), ["espejo/team"], "team's keys were kept: its selection stands");
  assert.deepEqual(
    registry.unknownFor(trimmed),
    ["espejo/tier"],
    "tier's is unknown, not empty: the unit holds it off",
  );
  const reread = namespaceInfo(ns(hugeLabels({ team: "a", tier: "a" })), trimmed, 2, registry.labelKeys);
  assert.deepEqual(registry.selecting(reread), ["espejo/team", "espejo/tier"]);
  const small = namespaceInfo(ns({ team: "a", tier: "a" }), undefined, 1);
  assert.equal(registry.labelsKnown(small), true, "a namespace kept whole is always known");
});

Deno.test("namespaceInfo trims more than MAX_KEPT_LABEL_COUNT labels however short they are", () => {
  const keys = keysOf("team");
  const short = Object.fromEntries(Array.from({ length: MAX_KEPT_LABEL_COUNT + 1 }, (_, i) => [`k${i}`, "v"]));
  assert.deepEqual(namespaceInfo(ns({ ...short, team: "a" }), undefined, 1, keys).labels, { team: "a" });
  const fewer = Object.fromEntries(Object.entries(short).slice(0, MAX_KEPT_LABEL_COUNT - 1));
  assert.deepEqual(namespaceInfo(ns({ ...fewer, team: "a" }), undefined, 1, keys).labels, { ...fewer, team: "a" });
});
