/**
 * What must hold once the tenant stops, within two reconcile intervals (the deadline adds slack for a shared
 * machine, see {@link INVARIANT_SLACK_MS}):
 *
 * - The namespace is selected: every synced object is what its SyncConfig wants. The fields the item sets are there
 *   with the item's values (`data`, `type`, `roleRef`, `subjects`, `spec`, the item's labels), no top-level field the
 *   item does not set (`immutable`), espejo's label, its owner annotation with the SyncConfig's key and its hash
 *   annotation, and the object is not being deleted (a finalizer holding a deleted object is not a restore).
 *   *Or* espejo says, specifically, why not: the SyncConfig's status counts a failed item and a condition message
 *   names the item, a Warning Event names it, and `espejo_items{state="failed"}` counts it. A reported failure is not
 *   accepted when it is a restore the issue requires espejo to make (an immutable field the tenant changed: espejo
 *   must replace the object, issue 20 "Restores that a patch cannot do").
 * - The namespace is not selected: the SyncConfig that prunes has deleted every object that still carries both of
 *   its markers (owner annotation and creation record, lib/sync/prune_decisions.ts); one the tenant took a marker from is not
 *   espejo's to delete. The SyncConfig without pruning leaves its objects as they are.
 */
import { deepEqual, type KubeObject } from "../../lib/kube/objects.ts";
import { jsonText } from "../../lib/kube/canonical_json.ts";
import { deeperThan, MAX_WALK_DEPTH } from "../../lib/kube/json_depth.ts";
import { counterValue, statusOf, type SyncConfigStatusView } from "../../testenv/harness.ts";
import {
  CREATED_ANNOTATION,
  type GameConfig,
  type GameItem,
  HASH_ANNOTATION,
  type ItemId,
  MANAGED_LABEL,
  OWNER_ANNOTATION,
  type World,
} from "./world.ts";

/** Added to two intervals: the time a busy 2-core machine may add to espejo's reaction (watch, queue, write). */
export const INVARIANT_SLACK_MS = 10_000;

export interface Violation {
  item: ItemId;
  problem: string;
}

/** Top-level fields of any object that no item sets: the server's own. */
const SERVER_FIELDS = new Set(["apiVersion", "kind", "metadata", "status"]);

/** What is wrong with `o` as the object `item` asks for, or an empty list. */
export function mismatches(item: GameItem, o: KubeObject | undefined): string[] {
  if (!o) return ["the object does not exist"];
  const problems: string[] = [];
  const t = item.template as Record<string, unknown>;
  const live = o as Record<string, unknown>;
  // deepEqual recurses as deep as both sides go, so no deeper than the item: a tenant's deep value is not walked.
  for (const [field, want] of Object.entries(t)) {
    if (SERVER_FIELDS.has(field)) continue;
    if (!deepEqual(live[field], want)) problems.push(`.${field} is ${short(live[field])}, want ${short(want)}`);
  }
  for (const field of Object.keys(live)) {
    if (!SERVER_FIELDS.has(field) && !(field in t)) problems.push(`.${field} is set (${short(live[field])})`);
  }
  const labels = o.metadata?.labels ?? {};
  const annotations = o.metadata?.annotations ?? {};
  for (const [k, v] of Object.entries(item.template.metadata?.labels ?? {})) {
    if (labels[k] !== v) problems.push(`label ${k} is ${short(labels[k])}, want ${short(v)}`);
  }
  if (labels[MANAGED_LABEL] !== "espejo") problems.push(`label ${MANAGED_LABEL} is ${short(labels[MANAGED_LABEL])}`);
  if (annotations[OWNER_ANNOTATION] !== item.config.key) {
    problems.push(`owner annotation is ${short(annotations[OWNER_ANNOTATION])}, want ${item.config.key}`);
  }
  if (!annotations[HASH_ANNOTATION]) problems.push("the hash annotation is missing");
  if (o.metadata?.deletionTimestamp) {
    problems.push(`it is being deleted, held by finalizers ${JSON.stringify(o.metadata.finalizers ?? [])}`);
  }
  return problems;
}

/**
 * `v` in at most 80 characters. A tenant may nest what it writes 10,000 levels deep (the Widget, world.ts), where
 * JSON.stringify may recurse past the stack: such a value is said to be deep, with the start of its jsonText.
 */
function short(v: unknown): string {
  if (deeperThan(v, MAX_WALK_DEPTH)) return `(more than ${MAX_WALK_DEPTH} levels deep) ${jsonText(v).slice(0, 40)}...`;
  const s = JSON.stringify(v) ?? "absent";
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
}

/** How espejo reports an item's failure, as read from status, Events and the metric. */
export interface Report {
  status: SyncConfigStatusView;
  events: string[];
  failedGauge: number;
}

export async function reportOf(w: World, config: GameConfig): Promise<Report> {
  const status = await statusOf(w.admin, w.cfgNs, config.name);
  const list = await w.admin.request<{ items: { type: string; reason: string; message: string }[] }>({
    method: "GET",
    path: `/api/v1/namespaces/${w.cfgNs}/events`,
    query: { fieldSelector: `involvedObject.name=${config.name},involvedObject.kind=SyncConfig` },
  });
  const events = list.items.filter((e) => e.type === "Warning").map((e) => e.message);
  const failedGauge = await counterValue(w.controller.metrics, "espejo_items", {
    syncconfig: config.key,
    state: "failed",
  });
  return { status, events, failedGauge };
}

/** The words espejo uses for an item: `.spec.syncItems[1] (RoleBinding game-readers)` (lib/sync/planner.ts). */
export function itemWords(item: GameItem): string {
  return `.spec.syncItems[${item.index}] (${item.kind} ${item.name})`;
}

/**
 * Whether `report` is a specific failure of `item` in all three places; the message when it is, else why not.
 * Only the first failure is named in a condition (the others are counted as "and N more"), so a condition that counts
 * more failures is enough when the Event names the item.
 */
export function reported(item: GameItem, r: Report): { ok: true; message: string } | { ok: false; why: string } {
  const words = itemWords(item);
  const conditions = (r.status.conditions ?? []).filter((c) => c.type === "Ready" || c.type === "Errored");
  const named = conditions.find((c) => c.message?.includes(words));
  const counted = conditions.find((c) => /more failed items/.test(c.message ?? ""));
  const event = r.events.find((m) => m.includes(words));
  if (!((r.status.failedItemCount ?? 0) > 0)) return { ok: false, why: "status counts no failed item" };
  if (!named && !(counted && event)) return { ok: false, why: "no condition names the item" };
  if (!event) return { ok: false, why: "no Warning Event names the item" };
  if (!(r.failedGauge > 0)) return { ok: false, why: 'espejo_items{state="failed"} is 0' };
  const message = named?.message ?? event;
  if (REQUIRED_RESTORE.test(message)) {
    return { ok: false, why: `reported (${message}), but a restore the issue requires: replace the object` };
  }
  return { ok: true, message };
}

/**
 * The API server's words for a write refused on a field that cannot be updated (ConfigMap/Secret `immutable`, Secret
 * `type`, RoleBinding `roleRef`): a restore only a replace can make, which the issue requires of espejo.
 */
export const REQUIRED_RESTORE = /field is immutable|cannot change roleRef/i;

/** One look at the world: the violations now (empty: the invariant holds), and the reported failures it accepted. */
export async function look(w: World): Promise<{ violations: Violation[]; accepted: string[] }> {
  const violations: Violation[] = [];
  const accepted: string[] = [];
  const reports = new Map<GameConfig, Report>();
  for (const item of w.items) {
    const o = await w.admin.request<KubeObject>({ method: "GET", path: item.path }).catch((e) => {
      if (e?.code === 404) return undefined;
      throw e;
    });
    if (!w.selected) {
      const a = o?.metadata?.annotations ?? {};
      if (
        item.config.prune && o && a[OWNER_ANNOTATION] === item.config.key && a[CREATED_ANNOTATION] === item.config.key
      ) {
        violations.push({ item: item.id, problem: `namespace not selected, but not pruned by ${item.config.key}` });
      }
      continue;
    }
    const problems = mismatches(item, o);
    if (problems.length === 0) continue;
    let report = reports.get(item.config);
    if (!report) reports.set(item.config, report = await reportOf(w, item.config));
    const r = reported(item, report);
    if (r.ok) accepted.push(`${item.id}: ${r.message}`);
    else violations.push({ item: item.id, problem: `${problems.join("; ")} (and espejo: ${r.why})` });
  }
  return { violations, accepted };
}

/**
 * Polls {@link look} until the invariant holds or two intervals and the slack have passed; the last look either
 * way. `elapsedMs`: how long it took to hold.
 */
export async function awaitInvariant(
  w: World,
): Promise<{ violations: Violation[]; accepted: string[]; elapsedMs: number }> {
  const start = Date.now();
  const deadline = start + 2 * w.intervalMs + INVARIANT_SLACK_MS;
  for (;;) {
    const seen = await look(w);
    if (seen.violations.length === 0 || Date.now() > deadline) return { ...seen, elapsedMs: Date.now() - start };
    await new Promise((r) => setTimeout(r, 200));
  }
}
