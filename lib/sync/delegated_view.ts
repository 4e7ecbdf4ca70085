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
 * - **Each item's object.** A syncItem needs `get` on its object; a deleteItem `get` or `delete` (with `delete`, what
 *   espejo's cache says of the object is what the ServiceAccount could learn by deleting it). Without, the item fails
 *   with the API server's words for the right it lacks, before anything is read: the same whether the object exists.
 * - **Contests** (lib/model/contradictions.ts): whether its item may write the object another item names.
 *
 * A trusted SyncConfig sees everything: nothing is asked for it, so units of trusted SyncConfigs send nothing more.
 */
import { getLogger } from "@logtape/logtape";
import type { ResourceInfo } from "../kube/discovery.ts";
import {
  type Claim,
  type Conflict,
  conflictsIn,
  type ContestFacts,
  type Contradictions,
  contradictions,
} from "../model/contradictions.ts";
import type { CompiledSyncConfig, DeleteItemSpec, SyncItemSpec } from "../model/syncconfig.ts";
import { renderTemplate } from "../model/template.ts";
import { AccessDenied, failure, type ItemResult, reasonOf } from "./failures.ts";
import { deleteItemSite, syncItemSite } from "./planner.ts";
import type { Asker, Right, Rights } from "./rights.ts";
import { isRetriable } from "../kube/errors.ts";

const log = getLogger(["espejo", "delegation"]);

type Failed = ItemResult & { state: "failed" };

export interface DelegatedViewDeps {
  rights: Pick<Rights, "may" | "forgetConfig">;
  /** The namespaced resource of an item's kind (discovery). */
  resolve(apiVersion: string, kind: string): Promise<ResourceInfo>;
  /** The SyncConfig the owner annotation of the cached object names, if it is cached. */
  ownerOf(resource: ResourceInfo, namespace: string, name: string): string | undefined;
  /** A review for SyncConfig `cfgKey` could not be made; said once per cause until the SyncConfig changes. */
  onReviewFailed?(cfgKey: string, message: string): void;
}

/** The SyncConfigs that select a namespace, as each may see it. */
export interface NamespaceView {
  /** Every trusted one, and each untrusted one whose ServiceAccount may get the namespace. */
  visible: CompiledSyncConfig[];
  /** Untrusted ones whose ServiceAccount may not get the namespace, or whose review failed: not synced or counted. */
  hidden: string[];
  /** Items that fail before anything is decided for them, by SyncConfig and field. */
  refused: Map<string, Map<string, Failed>>;
  /** A review failed for a passing reason (an outage): the unit comes back. */
  retry: boolean;
  /** A denial that hid the namespace or refused an item is asked again then: the unit comes back to decide again. */
  retryInMs?: number;
}

export class DelegatedView {
  /** Review failures already said, by SyncConfig: one log line and Event per cause, not one per unit. */
  readonly #said = new Map<string, Set<string>>();

  constructor(private readonly d: DelegatedViewDeps) {}

  /** What each of `configs` (the valid SyncConfigs that select `namespace`) may see of it. */
  async of(configs: readonly CompiledSyncConfig[], namespace: string): Promise<NamespaceView> {
    const view: NamespaceView = { visible: [], hidden: [], refused: new Map(), retry: false };
    await Promise.all(configs.map(async (cfg) => {
      const asker = askerOf(cfg);
      if (!asker) return view.visible.push(cfg);
      try {
        const ns = await this.d.rights.may(asker, {
          verb: "get",
          group: "",
          resource: "namespaces",
          namespace, // a RoleBinding in the namespace grants get on it: the API server asks in the namespace too
          name: namespace,
        });
        if (!ns.allowed) {
          comeBack(view, ns.recheckInMs);
          return view.hidden.push(cfg.key);
        }
        const refused = await this.#refusedItems(cfg, asker, namespace, (ms) => comeBack(view, ms));
        if (refused.size) view.refused.set(cfg.key, refused);
        view.visible.push(cfg);
      } catch (e) {
        view.hidden.push(cfg.key);
        view.retry ||= isRetriable(e);
        this.#reviewFailed(cfg, e);
      }
    }));
    // In the order the SyncConfigs came (Promise.all's pushes come in the order the reviews end).
    const order = new Map(configs.map((c, i) => [c.key, i]));
    view.visible.sort((a, b) => order.get(a.key)! - order.get(b.key)!);
    return view;
  }

  /**
   * The contested items of the visible SyncConfigs (lib/model/contradictions.ts), with the rights of untrusted
   * contenders asked as their ServiceAccounts; a refused item contests nothing.
   */
  async contests(view: NamespaceView, namespace: string): Promise<Contradictions> {
    const excluded = (cfgKey: string, field: string) => view.refused.get(cfgKey)?.has(field) === true;
    const conflicts = conflictsIn(view.visible, namespace, excluded);
    if (!conflicts.length) return new Map();
    const byKey = new Map(view.visible.map((c) => [c.key, c]));
    const writable = new Map<Claim, boolean>();
    const holders = new Map<Conflict, string | undefined>();
    await Promise.all(conflicts.map(async (conflict) => {
      const untrusted = [...conflict.deleters, ...conflict.syncers].filter((c) => !c.trusted);
      if (!untrusted.length) return;
      holders.set(conflict, await this.#holder(conflict, namespace));
      await Promise.all(untrusted.map(async (claim) => {
        writable.set(claim, await this.#mayWrite(byKey.get(claim.cfgKey)!, claim, namespace).catch(() => false));
      }));
    }));
    const facts: ContestFacts = {
      mayWrite: (claim) => writable.get(claim) ?? false,
      holder: (conflict) => holders.get(conflict),
    };
    return contradictions(conflicts, facts);
  }

  /** The SyncConfig changed or went: its rights are asked again, and its review failures said again. */
  forgetConfig(cfgKey: string): void {
    this.d.rights.forgetConfig(cfgKey);
    this.#said.delete(cfgKey);
  }

  /** The items of untrusted `cfg` whose ServiceAccount may not read their object in `namespace`. */
  async #refusedItems(
    cfg: CompiledSyncConfig,
    asker: Asker,
    namespace: string,
    recheckIn: (ms: number) => void,
  ): Promise<Map<string, Failed>> {
    const refused = new Map<string, Failed>();
    const check = async (item: SyncItemSpec | DeleteItemSpec, list: "syncItems" | "deleteItems") => {
      if (item.problem) return; // fails as it is, before any request
      const resource = await this.d.resolve(item.apiVersion, item.kind).catch(() => undefined);
      if (!resource) return; // an unknown kind fails in the executor, the same in every namespace
      const name = renderTemplate(item.name, namespace);
      const object = { group: resource.group, resource: resource.resource, namespace, name };
      let right = await this.d.rights.may(asker, { verb: "get", ...object });
      if (!right.allowed && list === "deleteItems") {
        const del = await this.d.rights.may(asker, { verb: "delete", ...object });
        if (del.allowed) right = del;
      }
      if (right.allowed) return;
      recheckIn(right.recheckInMs);
      const site = list === "syncItems"
        ? syncItemSite({ cfg, namespace }, item as SyncItemSpec, name)
        : deleteItemSite({ cfg, namespace }, item as DeleteItemSpec, name);
      refused.set(`.spec.${list}[${item.index}]`, failure(site)(new AccessDenied(right.denial, list)));
    };
    await Promise.all([
      ...cfg.syncItems.map((i) => check(i, "syncItems")),
      ...cfg.deleteItems.map((i) => check(i, "deleteItems")),
    ]);
    return refused;
  }

  /** Whether the claim's ServiceAccount may write its object: delete it, or create and update it. */
  async #mayWrite(cfg: CompiledSyncConfig, claim: Claim, namespace: string): Promise<boolean> {
    const asker = askerOf(cfg);
    if (!asker) return true;
    const resource = await this.d.resolve(claim.apiVersion, claim.kind);
    const object = { group: resource.group, resource: resource.resource, namespace };
    const allowed = (r: Right) => r.allowed;
    if (claim.list === "deleteItems") {
      return allowed(await this.d.rights.may(asker, { verb: "delete", ...object, name: claim.name }));
    }
    // A create names no object to the authorizer: RBAC cannot grant it by name.
    return allowed(await this.d.rights.may(asker, { verb: "create", ...object })) &&
      allowed(await this.d.rights.may(asker, { verb: "update", ...object, name: claim.name }));
  }

  /** The syncing SyncConfig whose owner annotation is on the cached object, if any. */
  async #holder(conflict: Conflict, namespace: string): Promise<string | undefined> {
    const [s] = conflict.syncers;
    const resource = await this.d.resolve(s.apiVersion, s.kind).catch(() => undefined);
    const owner = resource && this.d.ownerOf(resource, namespace, s.name);
    return conflict.syncers.some((c) => c.cfgKey === owner) ? owner : undefined;
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

/** The unit comes back after `ms` at the latest, to decide again what a denial decided. */
function comeBack(view: NamespaceView, ms: number): void {
  view.retryInMs = Math.min(view.retryInMs ?? ms, ms);
}

/** Distinct review failures said per SyncConfig until it changes: an outage's messages vary. */
const MAX_SAID = 8;

/** Who reviews are asked for: the ServiceAccount of an untrusted SyncConfig; none for a trusted one. */
function askerOf(cfg: CompiledSyncConfig): Asker | undefined {
  return !cfg.trusted && cfg.writeAs ? { key: cfg.key, writeAs: cfg.writeAs } : undefined;
}
