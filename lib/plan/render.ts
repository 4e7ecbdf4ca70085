/** The plan for people (text) and for scripts (`--output json`), and its exit code. */
import { formatChange } from "../model/field_diff.ts";
import type { ConfigPlan, PlanEntry, PlannedAction } from "./plan.ts";
import type { Comparison } from "./comparison.ts";
import { type ControllerReview, rightsJson, rightsText } from "./render_rights.ts";
import type { ServiceAccountReview } from "./service_account_review.ts";

export interface PlanReport {
  configs: ConfigPlan[];
  unchanged: number;
  /** The SyncConfigs read only as context (`-f` without `--all`): not shown, not in the exit code. */
  context: string[];
  /** Where the SyncConfigs of the cluster were read, in words. */
  syncConfigsFrom: string;
  /** Delegated mode: the trusted namespaces, and where they were given (`--trusted-namespaces`, the variable). */
  trusted?: { namespaces: string[]; from: string };
  comparison: Comparison;
  /** The rights review, when asked for (`--check-rights`). */
  controller?: ControllerReview;
  /** With it, the review of each ServiceAccount a planned SyncConfig writes as. */
  serviceAccounts?: ServiceAccountReview[];
}

const ACTIONS: PlannedAction[] = ["create", "adopt", "update", "recreate", "delete", "prune", "fail"];
const CHANGES = new Set<PlannedAction>(["create", "adopt", "update", "recreate", "delete", "prune"]);
const MARK: Record<PlannedAction, string> = {
  create: "+",
  adopt: "~",
  update: "~",
  recreate: "±",
  delete: "-",
  prune: "-",
  fail: "!",
};
/** Changed fields shown per object; the JSON output has them all. */
const MAX_CHANGES = 12;

export function summaryOf(r: PlanReport): Record<PlannedAction | "unchanged", number> {
  const counts = Object.fromEntries([...ACTIONS, "unchanged"].map((a) => [a, 0])) as Record<
    PlannedAction | "unchanged",
    number
  >;
  for (const c of r.configs) for (const e of c.entries) counts[e.action]++;
  counts.unchanged = r.unchanged;
  return counts;
}

/** 1: the plan has errors (an Invalid SyncConfig, an item that would fail); 2: something would change; 0: nothing. */
export function exitCodeOf(r: PlanReport): number {
  if (r.configs.some((c) => c.invalid || c.entries.some((e) => e.action === "fail"))) return 1;
  return r.configs.some((c) => c.entries.some((e) => CHANGES.has(e.action))) ? 2 : 0;
}

function entryJson(e: PlanEntry) {
  const { action, apiVersion, kind, namespace, name, reason, changes, unexplained, terminal } = e;
  return { action, apiVersion, kind, namespace, name, reason, changes, unexplained, terminal };
}

export function renderJson(r: PlanReport): string {
  return JSON.stringify(
    {
      syncConfigs: r.configs.map((c) => ({
        syncConfig: c.syncConfig,
        generation: c.generation,
        source: c.source,
        invalid: c.invalid,
        pruning: c.pruning,
        deleting: c.deleting,
        serviceAccount: c.writeAs?.serviceAccount,
        selectedNamespaces: c.selected,
        actions: c.entries.map(entryJson),
      })),
      summary: summaryOf(r),
      syncConfigsFrom: r.syncConfigsFrom,
      trustedNamespaces: r.trusted?.namespaces,
      contextSyncConfigs: r.context,
      comparison: r.comparison,
      ...(r.controller && rightsJson(r.controller, r.serviceAccounts)),
    },
    null,
    2,
  );
}

export function renderText(r: PlanReport): string {
  const lines: string[] = [`SyncConfigs read from ${r.syncConfigsFrom}.`];
  if (r.trusted) {
    lines.push(
      `Delegated mode (${r.trusted.from}): only SyncConfigs of ${r.trusted.namespaces.join(", ")} may write as ` +
        "espejo; one elsewhere writes as the ServiceAccount it names, and is Invalid without one.",
    );
  }
  if (r.context.length) {
    const n = r.context.length;
    lines.push(
      `Planned: the SyncConfigs of -f; ${n} other${n === 1 ? " is" : "s are"} read as context only (--all plans ` +
        `${n === 1 ? "it" : "them"} too).`,
    );
  }
  for (const c of r.configs) {
    const state = [
      c.source === "cluster" ? `generation ${c.generation}` : `from ${c.source}`,
      c.writeAs ? `writes as ServiceAccount ${c.writeAs.serviceAccount}` : "",
      c.pruning ? "pruning on" : "",
      c.deleting ? "being deleted" : "",
    ].filter(Boolean).join(", ");
    if (c.invalid) {
      lines.push(`SyncConfig ${c.syncConfig} (${state}): Invalid: ${c.invalid}`);
      continue;
    }
    lines.push(`SyncConfig ${c.syncConfig} (${state}): selects ${c.selected} namespace${c.selected === 1 ? "" : "s"}`);
    const byNamespace = Map.groupBy(c.entries, (e) => e.namespace);
    for (const [namespace, entries] of [...byNamespace].sort(([a], [b]) => a.localeCompare(b))) {
      lines.push(`  namespace ${namespace}`);
      for (const e of entries) {
        const why = e.reason ? `: ${e.reason}` : "";
        lines.push(`    ${MARK[e.action]} ${e.action.padEnd(8)} ${e.kind} ${e.name}${why}`);
        if (e.unexplained && !e.noopByRules) {
          lines.push("        (only fields the item does not set differ: a no-op if they are server defaults)");
        }
        for (const ch of (e.changes ?? []).slice(0, MAX_CHANGES)) lines.push(`        ${formatChange(ch)}`);
        const more = (e.changes?.length ?? 0) - MAX_CHANGES;
        if (more > 0) lines.push(`        ... and ${more} more (--output json lists them all)`);
      }
    }
  }
  const s = summaryOf(r);
  lines.push(
    "",
    `Plan: ${s.create} to create, ${s.adopt} to adopt, ${s.update} to update, ${s.recreate} to recreate, ` +
      `${s.delete} to delete, ${s.prune} to prune, ${s.fail} failing; ${s.unchanged} unchanged.`,
  );
  const { mode, why } = r.comparison;
  if (mode === "none") lines.push(`No write to compare (${why}).`);
  else {lines.push(
      `Writes compared by ${mode === "server-dry-run" ? "server-side dry run" : "espejo's rules"} (${why}).`,
    );}
  if (r.controller) lines.push(...rightsText(r.controller, r.serviceAccounts ?? []));
  return lines.join("\n");
}
