import assert from "node:assert/strict";
import { writeWaves } from "../../lib/model/waves.ts";
import type { SyncItemSpec } from "../../lib/model/syncconfig.ts";

const item = (index: number, apiVersion: string, kind: string, name: string, extra = {}): SyncItemSpec => ({
  index,
  apiVersion,
  kind,
  name,
  template: { apiVersion, kind, metadata: { name }, ...extra },
});
const rbac = "rbac.authorization.k8s.io/v1";
const binding = (index: number, name: string, roleKind: string, roleName: string) =>
  item(index, rbac, "RoleBinding", name, {
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: roleKind, name: roleName },
  });

const CASES: [string, SyncItemSpec[], number[][]][] = [
  ["independent items go in one wave", [item(0, "v1", "ConfigMap", "a"), item(1, "v1", "Secret", "b")], [[0, 1]]],
  [
    "a RoleBinding waits for the Role it binds",
    [
      item(0, "v1", "ConfigMap", "a"),
      item(1, rbac, "Role", "r"),
      binding(2, "rb", "Role", "r"),
      item(3, "v1", "Secret", "s"),
    ],
    [[0, 1, 3], [2]],
  ],
  ["a binding of a ClusterRole does not wait", [item(0, rbac, "Role", "r"), binding(1, "rb", "ClusterRole", "r")], [[
    0,
    1,
  ]]],
  ["a binding of a Role defined later does not wait", [binding(0, "rb", "Role", "r"), item(1, rbac, "Role", "r")], [[
    0,
    1,
  ]]],
  ["a binding of another Role does not wait", [item(0, rbac, "Role", "r"), binding(1, "rb", "Role", "other")], [[
    0,
    1,
  ]]],
  ["no items, no waves", [], []],
];

for (const [name, items, want] of CASES) {
  Deno.test(`writeWaves: ${name}`, () => assert.deepEqual(writeWaves(items), want));
}
