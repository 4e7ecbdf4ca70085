/**
 * What a SyncConfig of an untrusted namespace sees of one namespace (delegated mode, lib/model/identity.ts). espejo's
 * caches hold what espejo may read; such a SyncConfig must learn from them nothing its ServiceAccount could not read
 * itself, and must not switch off another SyncConfig's item where its ServiceAccount could not write. So before a unit
 * decides anything for it, the ServiceAccount's rights are asked (lib/sync/rights.ts), never the cache:
 *
 * - **The namespace.** One its ServiceAccount may not `get` is outside its view: the unit neither syncs it there nor
 *   counts or says anything about it, not even that its selector admits the namespace (the namespace's labels and
 *   existence are not the team's to read). What it created there is not pruned for that: it is out of sight, not out
 *   of the selector.
 * - **Each item's kind.** A syncItem needs `get` on its kind in the namespace; a deleteItem `get` or `delete` (with
 *   `delete`, what espejo's cache says of the object is what the ServiceAccount could learn by deleting it). Without,
 *   the item fails with the API server's words for the right it lacks, before anything is read: the same whether the
 *   object exists.
 * - **Contests** (lib/model/contradictions.ts): whether its item may write the object another item names.
 *
 * Nothing here waits for a team: when its reviews are past their pace, or a review fails, the SyncConfig is deferred
 * in the unit (neither synced nor counted nor uncounted there) and the unit comes back. A trusted SyncConfig is asked
 * nothing and waits for nothing: its items' precedence does not depend on untrusted ones (the unit syncs them at once).
 */
import { getLogger } from "@logtape/logtape";
import type { ResourceInfo } from "../kube/discovery.ts";
import {
  type Claim,
  conflictsIn,
  type ContestFacts,
  type Contradictions,
  contradictions,
} from "../model/contradictions.ts";
import type { CompiledSyncConfig, DeleteItemSpec, SyncItemSpec } from "../model/syncconfig.ts";
import { renderTemplate } from "../model/template.ts";
import { AccessDenied, failure, type ItemResult, reasonOf } from "./failures.ts";
import { deleteItemSite, syncItemSite } from "./planner.ts";
import { type Asker, ReviewsPaced, type Right, type Rights } from "./rights.ts";

const log = getLogger(["espejo", "delegation"]);

type Failed = ItemResult & { state: "failed" };

export interface DelegatedViewDeps {
  rights: Pick<Rights, "may" | "forgetConfig">;
  /** The namespaced resource of an item's kind (discovery). */
  resolve(apiVersion: string, kind: string): Promise<ResourceInfo>;
  /** A review for SyncConfig `cfgKey` could not be made; said once per cause until the SyncConfig changes. */
  onReviewFailed?(cfgKey: string, message: string): void;
}

/** The untrusted SyncConfigs that select a namespace, as each may see it. */
export interface NamespaceView {
  /** Those whose ServiceAccount may get the namespace: synced here. */
  visible: CompiledSyncConfig[];
  /** Those whose ServiceAccount may not: not synced or counted here (their counts here go). */
  hidden: string[];
  /** Those not decided in this unit (reviews past their pace, or failed): neither synced nor uncounted here. */
  deferred: string[];
  /** Items that fail before anything is decided for them, by SyncConfig and field. */
  refused: Map<string, Map<string, Failed>>;
  /** A review failed: the unit comes back with back-off. */
  retry: boolean;
  /** A denial or the pace hid something, decided again then: the unit comes back. */
  retryInMs?: number;
}

export class DelegatedView {
  /** Review failures already said, by SyncConfig: one log line and Event per cause, not one per unit. */
  readonly #said = new Map<string, Set<string>>();

  constructor(private readonly d: DelegatedViewDeps) {}

  /** What each of the untrusted `configs` (valid, selecting `namespace`) may see of it. */
  async of(configs: readonly CompiledSyncConfig[], namespace: string): Promise<NamespaceView> {
    const view: NamespaceView = { visible: [], hidden: [], deferred: [], refused: new Map(), retry: false };
    const comeBack = (ms: number) => view.retryInMs = Math.min(view.retryInMs ?? ms, ms);
    const seen = await Promise.all(configs.map(async (cfg) => {
      const asker = askerOf(cfg);
      if (!asker) return "visible";
      try {
        // A RoleBinding in the namespace grants get on it: the API server asks in the namespace too.
        const ns = await this.d.rights.may(asker, { verb: "get", group: "", resource: "namespaces", namespace });
        if (!ns.allowed) {
          comeBack(ns.recheckInMs);
          return "hidden";
        }
        const refused = await this.#refusedItems(cfg, asker, namespace, comeBack);
        if (refused.size) view.refused.set(cfg.key, refused);
        return "visible";
      } catch (e) {
        if (e instanceof ReviewsPaced) comeBack(e.retryInMs);
        else {
          view.retry = true;
          this.#reviewFailed(cfg, e);
        }
        return "deferred";
      }
    }));
    configs.forEach((cfg, i) => {
      if (seen[i] === "visible") view.visible.push(cfg);
      else view[seen[i]].push(cfg.key);
    });
    return view;
  }

  /**
   * The contested items of the visible untrusted SyncConfigs (lib/model/contradictions.ts) against each other and
   * against `trusted` (the trusted SyncConfigs that select the namespace, or may: their items contest whether performed
   * here or not), with the rights of untrusted contenders asked for their ServiceAccounts; a refused item contests
   * nothing. A right that cannot be asked leaves its object undecided.
   */
  async contests(
    view: NamespaceView,
    namespace: string,
    trusted: readonly CompiledSyncConfig[],
  ): Promise<Contradictions> {
    const excluded = (cfgKey: string, field: string) => view.refused.get(cfgKey)?.has(field) === true;
    const conflicts = conflictsIn([...trusted, ...view.visible], namespace, excluded)
      .filter((c) => [...c.deleters, ...c.syncers].some((claim) => !claim.trusted));
    if (!conflicts.length) return new Map();
    const byKey = new Map(view.visible.map((c) => [c.key, c]));
    const writable = new Map<Claim, boolean | undefined>();
    await Promise.all(
      conflicts.flatMap((c) => [...c.deleters, ...c.syncers]).filter((c) => !c.trusted).map(
        async (claim) => writable.set(claim, await this.#mayWrite(byKey.get(claim.cfgKey)!, claim, namespace)),
      ),
    );
    const facts: ContestFacts = { mayWrite: (claim) => writable.get(claim) };
    // A trusted SyncConfig's items are decided without the untrusted ones, by the unit.
    const isTrusted = new Set(trusted.map((c) => c.key));
    return new Map([...contradictions(conflicts, facts)].filter(([cfgKey]) => !isTrusted.has(cfgKey)));
  }

  /** The SyncConfig changed or went: its rights are asked again, and its review failures said again. */
  forgetConfig(cfgKey: string): void {
    this.d.rights.forgetConfig(cfgKey);
    this.#said.delete(cfgKey);
  }

  /** The items of untrusted `cfg` whose ServiceAccount may not read their kind in `namespace`. */
  async #refusedItems(
    cfg: CompiledSyncConfig,
    asker: Asker,
    namespace: string,
    comeBack: (ms: number) => void,
  ): Promise<Map<string, Failed>> {
    const refused = new Map<string, Failed>();
    const check = async (item: SyncItemSpec | DeleteItemSpec, list: "syncItems" | "deleteItems") => {
      if (item.problem) return; // fails as it is, before any request
      const name = renderTemplate(item.name, namespace);
      const field = `.spec.${list}[${item.index}]`;
      const fail = failure(
        list === "syncItems"
          ? syncItemSite({ cfg, namespace }, item as SyncItemSpec, name)
          : deleteItemSite({ cfg, namespace }, item as DeleteItemSpec, name),
      );
      let resource: ResourceInfo;
      try {
        resource = await this.d.resolve(item.apiVersion, item.kind);
      } catch (e) {
        // Not decided from the cache either: the item fails with why the kind is not known (retried if it passes).
        return void refused.set(field, fail(e));
      }
      const kind = { group: resource.group, resource: resource.resource, namespace, name };
      let right: Right = await this.d.rights.may(asker, { verb: "get", ...kind });
      if (!right.allowed && list === "deleteItems") {
        const del = await this.d.rights.may(asker, { verb: "delete", ...kind });
        if (del.allowed) right = del;
      }
      if (right.allowed) return;
      comeBack(right.recheckInMs);
      refused.set(field, fail(new AccessDenied(right.denial, list)));
    };
    await Promise.all([
      ...cfg.syncItems.map((i) => check(i, "syncItems")),
      ...cfg.deleteItems.map((i) => check(i, "deleteItems")),
    ]);
    return refused;
  }

  /**
   * Whether the claim's ServiceAccount may write its object: delete it, or create and update it; undefined when that
   * could not be asked.
   */
  async #mayWrite(cfg: CompiledSyncConfig, claim: Claim, namespace: string): Promise<boolean | undefined> {
    const asker = askerOf(cfg);
    if (!asker) return true;
    try {
      const resource = await this.d.resolve(claim.apiVersion, claim.kind);
      const kind = { group: resource.group, resource: resource.resource, namespace };
      const may = async (verb: string) => (await this.d.rights.may(asker, { verb, ...kind })).allowed;
      if (claim.list === "deleteItems") return await may("delete");
      return await may("create") && await may("update");
    } catch {
      return undefined;
    }
  }

  #reviewFailed(cfg: CompiledSyncConfig, e: unknown): void {
    const message = `SyncConfig ${cfg.key}: the rights of ServiceAccount ${cfg.writeAs?.serviceAccount} could not ` +
      `be reviewed, so nothing is done for it where they decide: ${reasonOf(e)}; espejo reviews them with ` +
      "SubjectAccessReviews, which kubectl apply -k deploy/opt-in/delegation grants it (docs/delegation.md)";
    let said = this.#said.get(cfg.key);
    if (!said) this.#said.set(cfg.key, said = new Set());
    if (said.has(message) || said.size >= MAX_SAID) return;
    said.add(message);
    log.warn("{message}", { syncConfig: cfg.key, message });
    this.d.onReviewFailed?.(cfg.key, message);
  }
}

/** Distinct review failures said per SyncConfig until it changes: an outage's messages vary. */
const MAX_SAID = 8;

/** Who reviews are asked for: the ServiceAccount of an untrusted SyncConfig; none for a trusted one. */
function askerOf(cfg: CompiledSyncConfig): Asker | undefined {
  return !cfg.trusted && cfg.writeAs ? { key: cfg.key, namespace: cfg.namespace, writeAs: cfg.writeAs } : undefined;
}
