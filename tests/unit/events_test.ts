import assert from "node:assert/strict";
import { groupFailures } from "../../lib/kube/events.ts";

Deno.test("groupFailures folds one item's failure across namespaces into one namespace-free message", () => {
  const errors = [
    "SyncConfig a/b: .spec.syncItems[1] (Nope n) in namespace team-a: kind Nope is not served in apiVersion v1",
    "SyncConfig a/b: .spec.syncItems[1] (Nope n) in namespace team-b: kind Nope is not served in apiVersion v1",
    "SyncConfig a/b: .spec.syncItems[0] has no metadata.name",
    "SyncConfig a/b: .spec.syncItems[2] (ConfigMap x) in namespace team-a: the API server refused it (422 Invalid: y)",
  ];
  assert.deepEqual(groupFailures(errors), [
    "SyncConfig a/b: .spec.syncItems[1] (Nope n): kind Nope is not served in apiVersion v1",
    "SyncConfig a/b: .spec.syncItems[0] has no metadata.name",
    "SyncConfig a/b: .spec.syncItems[2] (ConfigMap x): the API server refused it (422 Invalid: y)",
  ]);
});

Deno.test("groupFailures gives the same messages whichever namespaces fail", () => {
  const failure = (ns: string) => `SyncConfig a/b: .spec.syncItems[1] (Nope n) in namespace ${ns}: no`;
  assert.deepEqual(groupFailures([failure("x")]), groupFailures([failure("y"), failure("z")]));
});
