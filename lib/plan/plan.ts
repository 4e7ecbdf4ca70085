/**
 * What the controller would do now, from a {@link Snapshot}: the same compiler, selection, desired objects, planner
 * and prune rules as the controller (lib/sync/planner.ts, lib/sync/prune_decisions.ts), only nothing is performed. Like a
 * freshly started controller it knows no fights and no backoffs; what the server adds to an item it learns from the
 * first namespace that shows it, as the controller learns it from its first write.
 */
import { namespacedOnly, type ResourceInfo, resourceKey } from "../kube/discovery.ts";
import type { KubeObject } from "../kube/objects.ts";
import { extrasHash } from "../model/drift.ts";
import { type FieldChange, fieldDiff } from "../model/field_diff.ts";
import { type CompiledSyncConfig, type CompileOptions, compileSyncConfig, keyOf } from "../model/syncconfig.ts";
import type { WriteIdentity } from "../model/identity.ts";
import { renderTemplate } from "../model/template.ts";
import { decodeManaged } from "../sync/cached_object.ts";
import { desiredObject } from "../sync/desired.ts";
import { contradicted, failure, OwnedByOther } from "../sync/failures.ts";
import { conflictsIn, type Contest, contradictions } from "../model/contradictions.ts";
import {
  deleteItemSite,
  keysOf,
  planAdoption,
  planDeleteItem,
  planSyncItem,
  type PlanView,
  syncItemSite,
} from "../sync/planner.ts";
import { liveParts } from "../sync/applier.ts";
import { pruneEnabled, type PrunePlan, pruneScope } from "../sync/prune_decisions.ts";
import { Registry } from "../model/registry.ts";
import type { NamespaceInfo } from "../model/namespace_info.ts";
import { explainedByDefaults } from "./server_defaults.ts";
import { kindKey, type Snapshot } from "./snapshot.ts";
import { type PlanScope, selectPlanned } from "./selection.ts";
import { prunesOf } from "./prunes.ts";
import { MANAGED_LABEL, MANAGED_LABEL_VALUE } from "../model/markers.ts";

export type PlannedAction = "create" | "adopt" | "update" | "recreate" | "delete" | "prune" | "fail";

export interface PlanEntry {
  action: PlannedAction;
  apiVersion: string;
  kind: string;
  namespace: string;
  name: string;
  /** Why: the drift found, the prune trigger, or the failure. */
  reason?: string;
  /** Fields a write would change (Secret values never shown). */
  changes?: FieldChange[];
  /** Only fields the item does not set differ: a no-op on the server if they are its defaults. */
  unexplained?: boolean;
  /** An update that espejo's rules of server defaults (./server_defaults.ts) find a no-op; a dry run decides. */
  noopByRules?: boolean;
  /** A failure only a change of the SyncConfig, the namespace or the object can fix. */
  terminal?: boolean;
  /** For `--server-dry-run`: the resource, and what a write is sent against. */
  resource?: ResourceInfo;
  desired?: KubeObject;
  live?: KubeObject;
  uid?: string;
  cfgKey: string;
  forceRecreate?: boolean;
}

export interface ConfigPlan {
  syncConfig: string;
  generation: number;
  source: string;
  invalid?: string;
  pruning: boolean;
  deleting: boolean;
  /** Namespaces it selects. */
  selected: number;
  /** Their names (what `--check-rights` reviews a ServiceAccount's rights in). */
  namespaces?: string[];
  /** The ServiceAccount its writes (prunes included) are made as; undefined: espejo's own identity. */
  writeAs?: WriteIdentity;
  /**
   * Of an untrusted namespace (delegated mode): the controller acts for it only in namespaces its ServiceAccount may
   * get (lib/sync/delegated_view.ts), which `--check-rights` reviews too.
   */
  untrusted?: boolean;
  entries: PlanEntry[];
}

export interface PlanResult {
  /** The SyncConfigs planned (./selection.ts), each with what the controller would do for it. */
  configs: ConfigPlan[];
  /** Items in sync (no action). */
  unchanged: number;
  /** The keys of the SyncConfigs read only as context: not planned, not shown, not in the exit code. */
  context: string[];
}

/**
 * The plan of the SyncConfigs `scope` selects. Every SyncConfig read takes part in the decisions (contradictions
 * between items, objects another SyncConfig's item holds, what a prune leaves to another), as in the controller.
 * `compile`: the controller's settings the compiler reads (`--trusted-namespaces`).
 */
export async function planSnapshot(
  snapshot: Snapshot,
  pruneDefault: boolean,
  scope: PlanScope,
  compile: CompileOptions = {},
): Promise<PlanResult> {
  const registry = new Registry<NamespaceInfo>(undefined, compile);
  for (const { syncConfig } of snapshot.syncConfigs) {
    // One being deleted syncs nothing (as in the controller): it only prunes.
    if (!syncConfig.metadata?.deletionTimestamp) registry.compile(keyOf(syncConfig), syncConfig);
  }
  const namespaces = snapshot.namespaces.filter((n) => n.phase === "Active").sort((a, b) =>
    a.name.localeCompare(b.name)
  );
  const serverAdds = new Map<string, string>();
  const byName = new Map(snapshot.namespaces.map((n) => [n.name, n]));
  const view: PlanView = {
    claims: (owner, claimant, r, ns, name) =>
      registry.holds(owner, claimant, registry.itemOwners(r, byName.get(ns), name)),
    serverAdds: (itemKey) => serverAdds.get(itemKey),
    fightWaitMs: () => 0,
    removedByOther: () => false,
    backedOff: () => undefined,
  };
  const { planned, context } = selectPlanned(snapshot.syncConfigs, scope);
  const result: PlanResult = { configs: [], unchanged: 0, context: context.map((c) => keyOf(c.syncConfig)) };
  for (const { syncConfig, source } of planned) {
    const key = keyOf(syncConfig);
    const deleting = syncConfig.metadata?.deletionTimestamp !== undefined;
    const pruning = pruneEnabled(syncConfig.metadata, pruneDefault);
    const compiled = deleting ? undefined : registry.get(key)?.result;
    const plan: ConfigPlan = {
      syncConfig: key,
      generation: syncConfig.metadata?.generation ?? 0,
      source,
      pruning,
      deleting,
      selected: 0,
      entries: [],
    };
    result.configs.push(plan);
    if (compiled && !compiled.ok) {
      plan.invalid = compiled.message;
      continue;
    }
    const cfg = compiled?.config;
    plan.writeAs = cfg?.writeAs;
    if (cfg && !cfg.trusted) plan.untrusted = true;
    plan.namespaces = [];
    for (const ns of namespaces) {
      const selecting = registry.selecting(ns);
      if (!cfg || !selecting.includes(key)) continue;
      plan.selected++;
      plan.namespaces.push(ns.name);
      // Precedence as the controller's unit decides it; whether a team's ServiceAccount may write what its item
      // contests is not known here, so it is taken to (lib/model/contradictions.ts, CONTENDING).
      const contested = contradictions(conflictsIn(registry.selectingConfigs(ns), ns.name)).get(key);
      for (const item of cfg.deleteItems) plan.entries.push(...planDelete(snapshot, cfg, ns.name, item, contested));
      for (const item of cfg.syncItems) {
        const entry = await planItem(snapshot, cfg, ns.name, item, view, serverAdds, contested);
        if (entry) plan.entries.push(entry);
        else result.unchanged++;
      }
    }
    if (pruning) {
      const result = deleting ? compileSyncConfig(syncConfig, compile) : compiled;
      // A deleted SyncConfig prunes as the ServiceAccount it names, as the controller does.
      if (result?.ok) plan.writeAs = result.config.writeAs;
      const unknownKind = result?.ok &&
        result.config.syncItems.some((i) => snapshot.resources.get(kindKey(i.apiVersion, i.kind)) instanceof Error);
      const scopeIn = (ns: NamespaceInfo) =>
        pruneScope({ enabled: true, deleting, result, selects: registry.selecting(ns).includes(key), unknownKind });
      plan.entries.push(...prunesOf(snapshot, registry, key, scopeIn, namespaces).map((p) => pruneEntry(p, key)));
    }
  }
  return result;
}

function resourceOf(snapshot: Snapshot, apiVersion: string, kind: string): ResourceInfo {
  const r = snapshot.resources.get(kindKey(apiVersion, kind));
  if (!r) throw new Error(`${kind} (${apiVersion}) was not looked up`);
  if (r instanceof Error) throw r;
  return namespacedOnly(r, apiVersion);
}

function objectOf(snapshot: Snapshot, r: ResourceInfo, namespace: string, name: string): KubeObject | undefined {
  return snapshot.objects.get(resourceKey(r))?.get(`${namespace}/${name}`);
}

function planDelete(
  snapshot: Snapshot,
  cfg: CompiledSyncConfig,
  namespace: string,
  item: CompiledSyncConfig["deleteItems"][number],
  contested: ReadonlyMap<string, Contest> | undefined,
): PlanEntry[] {
  const name = renderTemplate(item.name, namespace);
  const base = { apiVersion: item.apiVersion, kind: item.kind, namespace, name, cfgKey: cfg.key };
  // A spec problem, or a contradiction with another item here (as the controller's unit decides it).
  const field = `.spec.deleteItems[${item.index}]`;
  const contest = contested?.get(field);
  const problem = item.problem ? `SyncConfig ${cfg.key}: ${item.problem}` : contest &&
    contradicted(cfg.key, namespace, field, contest).message;
  if (problem) return [{ ...base, action: "fail", reason: problem, terminal: true }];
  let resource: ResourceInfo;
  try {
    resource = resourceOf(snapshot, item.apiVersion, item.kind);
  } catch (e) {
    const f = failure(deleteItemSite({ cfg, namespace }, item, name))(e);
    return [{ ...base, action: "fail", reason: f.message, terminal: f.terminal }];
  }
  const live = objectOf(snapshot, resource, namespace, name);
  const plan = planDeleteItem({ cfg, namespace, item, existing: live && { uid: live.metadata?.uid ?? "" } }, {
    backedOff: () => undefined,
  });
  if (plan.kind !== "delete") return [];
  return [{ ...base, action: "delete", reason: `.spec.deleteItems[${item.index}]`, resource, uid: plan.uid }];
}

async function planItem(
  snapshot: Snapshot,
  cfg: CompiledSyncConfig,
  namespace: string,
  item: CompiledSyncConfig["syncItems"][number],
  view: PlanView,
  serverAdds: Map<string, string>,
  contested: ReadonlyMap<string, Contest> | undefined,
): Promise<PlanEntry | undefined> {
  const name = renderTemplate(item.name, namespace);
  const base = {
    apiVersion: item.apiVersion,
    kind: item.kind,
    namespace,
    name,
    cfgKey: cfg.key,
    forceRecreate: cfg.forceRecreate,
  };
  const field = `.spec.syncItems[${item.index}]`;
  const contest = contested?.get(field);
  const problem = item.problem ? `SyncConfig ${cfg.key}: ${item.problem}` : contest &&
    contradicted(cfg.key, namespace, field, contest).message;
  if (problem) return { ...base, action: "fail", reason: problem, terminal: true };
  const fail = failure(syncItemSite({ cfg, namespace }, item, name));
  let resource: ResourceInfo;
  try {
    resource = resourceOf(snapshot, item.apiVersion, item.kind);
  } catch (e) {
    const f = fail(e);
    return { ...base, action: "fail", reason: f.message, terminal: f.terminal };
  }
  const { object: desired, hash } = await desiredObject(cfg, item, namespace);
  const live = objectOf(snapshot, resource, namespace, name);
  const labelled = live?.metadata?.labels?.[MANAGED_LABEL] === MANAGED_LABEL_VALUE;
  const observed = live && labelled ? decodeManaged(live, undefined, true) : undefined;
  const target = { cfg, namespace, item, resource, desired, hash, observed };
  const { plan } = planSyncItem(target, view);
  const entry = { ...base, resource, desired, live };
  switch (plan.kind) {
    case "none":
    case "hold":
    case "backoff":
      return undefined;
    case "fail":
      return { ...entry, action: "fail", reason: plan.result.message, terminal: plan.result.terminal };
    case "create": {
      if (!live) return { ...entry, action: "create" };
      // It exists without espejo's label: the controller adopts it, as the planner decides.
      const adoption = planAdoption({ cfgKey: cfg.key, resource, namespace, name }, liveParts(live), view);
      if (adoption.kind === "held") {
        return {
          ...entry,
          action: "fail",
          reason: fail(new OwnedByOther(adoption.owner, cfg)).message,
          terminal: true,
        };
      }
      const changes = fieldDiff(desired, live, resource);
      return { ...entry, action: "adopt", reason: "it exists without espejo's label", changes };
    }
    case "update": {
      if (plan.unexplained) serverAdds.set(keysOf(target).itemKey, extrasHash(desired, live!));
      const changes = fieldDiff(desired, live!, resource);
      const noopByRules = explainedByDefaults(desired, live!) || undefined;
      const unexplained = plan.unexplained || undefined;
      return { ...entry, action: "update", reason: plan.reason, changes, unexplained, noopByRules };
    }
  }
}

function pruneEntry({ candidate: { resource, namespace, name, uid }, why }: PrunePlan, cfgKey: string): PlanEntry {
  const apiVersion = resource.group ? `${resource.group}/${resource.version}` : resource.version;
  return { action: "prune", apiVersion, kind: resource.kind, namespace, name, reason: why, resource, uid, cfgKey };
}
