/** `espejo plan`'s exit codes and summary (lib/plan/render.ts). */
import assert from "node:assert/strict";
import type { ConfigPlan, PlanEntry, PlannedAction } from "../../lib/plan/plan.ts";
import { exitCodeOf, type PlanReport, renderJson, renderText, summaryOf } from "../../lib/plan/render.ts";

const entry = (action: PlannedAction): PlanEntry => ({
  action,
  apiVersion: "v1",
  kind: "ConfigMap",
  namespace: "team-a",
  name: `cm-${action}`,
  cfgKey: "espejo/cfg",
});
const report = (entries: PlanEntry[], invalid?: string): PlanReport => {
  const config: ConfigPlan = {
    syncConfig: "espejo/cfg",
    generation: 1,
    source: "cluster",
    invalid,
    pruning: false,
    deleting: false,
    selected: 1,
    entries,
  };
  return { configs: [config], unchanged: 3, controller: { identity: "sa", missing: [] } };
};

const cases: [string, PlanReport, number][] = [
  ["nothing would change", report([]), 0],
  ["a create", report([entry("create")]), 2],
  ["a prune", report([entry("prune")]), 2],
  ["an item that would fail, beside a change", report([entry("create"), entry("fail")]), 1],
  ["an Invalid SyncConfig", report([], "SyncConfig espejo/cfg: .spec...: bad"), 1],
];
for (const [name, r, code] of cases) {
  Deno.test(`plan exit code: ${name} -> ${code}`, () => assert.equal(exitCodeOf(r), code));
}

Deno.test("plan summary counts every action and the unchanged items, in text and JSON alike", () => {
  const r = report(
    ["create", "create", "adopt", "update", "delete", "prune", "fail"].map((a) => entry(a as PlannedAction)),
  );
  const s = summaryOf(r);
  assert.deepEqual(s, { create: 2, adopt: 1, update: 1, recreate: 0, delete: 1, prune: 1, fail: 1, unchanged: 3 });
  assert.match(
    renderText(r),
    /Plan: 2 to create, 1 to adopt, 1 to update, 0 to recreate, 1 to delete, 1 to prune, 1 failing; 3 unchanged\./,
  );
  assert.deepEqual(JSON.parse(renderJson(r)).summary, s);
});
