import assert from "node:assert/strict";
import { namespaceInfo } from "../../lib/model/namespace_info.ts";

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
