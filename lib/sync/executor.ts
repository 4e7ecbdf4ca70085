/**
 * Syncs the items of one SyncConfig in one namespace: gathers what the planner needs (the resource from discovery,
 * a filled cache, the content of an object kept without it), asks the pure planner (lib/sync/planner.ts) what to do,
 * has the applier (lib/sync/applier.ts) do it, and keeps the books: retries, fights, and what the server adds to
 * each item's writes. Each item succeeds or fails on its own (lib/sync/failures.ts names and classifies failures).
 */
import { getLogger } from "@logtape/logtape";
import type { KubeClient } from "../kube/client.ts";
import type { Reflector } from "../kube/reflector.ts";
import { Discovery, namespacedOnly, objectPath, type ResourceInfo } from "../kube/discovery.ts";
import { isNotFound } from "../kube/errors.ts";
import { extrasHash } from "../model/drift.ts";
import { ServerAdds } from "./server_adds.ts";
import { FightBook } from "./fights.ts";
import type { KubeObject } from "../kube/objects.ts";
import { cacheProblem, ready, type ResourceCaches } from "./resource_caches.ts";
import type { DeleteItemSpec, SyncItemSpec } from "../model/syncconfig.ts";
import type { ExecutorHooks, ItemRef } from "./executor_hooks.ts";
import { renderTemplate } from "../model/template.ts";
import { deletePlanWords, logDecision, syncPlanWords } from "./plan_words.ts";
import { Applier, type WriteTarget } from "./applier.ts";
import type { CachedObject } from "./cached_object.ts";
import { desiredObject } from "./desired.ts";
import { failure, type ItemResult, specProblem, tryOutcomeOf } from "./failures.ts";
import {
  deleteItemSite,
  keysOf,
  planDeleteItem,
  planSyncItem,
  type PlanView,
  syncItemSite,
  type SyncPlan,
  type SyncTarget,
} from "./planner.ts";
import { afterTry, MAX_FIGHT_DELAY_MS, type TryOutcome } from "./retry_policy.ts";
import { RetryBook } from "./retry_book.ts";
import { acceptWritten, remember } from "./verdict.ts";
import { HASH_ANNOTATION } from "../model/markers.ts";

const log = getLogger(["espejo", "executor"]);

export class Executor {
  readonly #fights: FightBook;
  /** Failed writes and deletes by SyncConfig, item and namespace (see lib/sync/retry_book.ts). */
  readonly #retries = new RetryBook<ItemResult>();
  /** By item: what the server added to our last write of it (see lib/sync/server_adds.ts). */
  readonly #serverAdds = new ServerAdds();
  /** Items whose first unexplained object is being written (see syncItem). */
  readonly #learning = new Map<string, Promise<void>>();
  readonly #applier: Applier;
  readonly #view: PlanView;

  constructor(
    private readonly client: KubeClient,
    private readonly discovery: Discovery,
    private readonly caches: ResourceCaches,
    private readonly hooks: ExecutorHooks = {},
  ) {
    this.#fights = new FightBook(hooks.maxFightDelayMs ?? MAX_FIGHT_DELAY_MS);
    const claims = hooks.claims ?? (() => false);
    this.#applier = new Applier(client, claims, hooks.onWrite);
    this.#view = {
      claims,
      serverAdds: (itemKey) => this.#serverAdds.get(itemKey),
      fightWaitMs: (fightKey) => this.#fights.waitMs(fightKey),
      inFight: (fightKey) => this.#fights.inFight(fightKey),
      removedByOther: (r, objectKey) => this.caches.removedByOther(r, objectKey),
      backedOff: (key, attempt) => this.#retries.waiting(key, attempt),
    };
  }

  async syncItem(ref: ItemRef, item: SyncItemSpec): Promise<ItemResult> {
    const name = renderTemplate(item.name, ref.namespace);
    const site = syncItemSite(ref, item, name);
    const fail = failure(site);
    if (item.problem) return specProblem(ref.cfg.key, `.spec.syncItems[${item.index}]`, item.problem);
    let target: SyncTarget;
    let settled: () => void;
    try {
      const resource = await this.#resolve(item.apiVersion, item.kind);
      const { object: desired, hash } = await desiredObject(ref.cfg, item, ref.namespace);
      const cache = this.caches.managed(resource);
      if (!(await ready(cache))) return fail(new Error(cacheProblem(resource, cache.lastError)));
      let observed = cache.get(`${ref.namespace}/${desired.metadata!.name}`);
      // Kept without content while no item named it (anyone can label their objects): read it once now.
      if (observed?.contentless) {
        const read = () => this.#read(cache, objectPath(resource, ref.namespace, name));
        // A large one holds MiBs while it is read and judged: one at a time (the applier's gate).
        observed = await (observed.large ? this.#applier.large.run(read) : read());
      }
      target = { ...ref, item, resource, desired, hash, observed };
      // Judged below after an await or two (the read, what the server adds): packed then, not at its next get.
      settled = () => cache.settled(`${ref.namespace}/${desired.metadata!.name}`, target.observed);
    } catch (e) {
      return fail(e);
    }
    const keys = keysOf(target);
    let { plan, memo } = planSyncItem(target, this.#view);
    // Put back only what learnt something: a packed entry put back unchanged would be packed and rewritten for nothing.
    if (target.observed && memo) {
      remember(target.observed, memo);
      settled();
    }
    // The first unexplained object of an item is written to learn what the server adds; the others wait for that
    // (after a restart: one write per item that the server extends, not one per namespace).
    const learning = this.#learning.get(keys.itemKey);
    if (plan.kind === "update" && plan.unexplained && learning) {
      await learning;
      ({ plan, memo } = planSyncItem(target, this.#view));
      if (memo) {
        remember(target.observed!, memo);
        settled();
      }
    }
    const decided = plan;
    const logged = (result?: ItemResult) => logDecision(site, () => syncPlanWords(decided), result);
    if (plan.kind !== "create" && plan.kind !== "update") logged();
    switch (plan.kind) {
      case "none":
        this.#retries.succeeded(keys.retryKey);
        return { state: "synced", action: "none" };
      case "hold":
        return { state: "synced", action: "none", retryInMs: plan.retryInMs };
      case "backoff":
      case "fail":
        return plan.result;
    }
    const written = this.#write(target, plan, keys.itemKey, fail);
    if (plan.kind === "update" && plan.unexplained && !this.#learning.has(keys.itemKey)) {
      const learnt = written.then(() => {}).finally(() => this.#learning.delete(keys.itemKey));
      this.#learning.set(keys.itemKey, learnt);
    }
    const { result, outcome } = await written;
    // One decision for what the try tells the books (lib/sync/retry_policy.ts); a restore keys its attempt on the
    // object, not on the live version.
    const tried = keysOf(target, plan.restore);
    const decision = afterTry({ outcome, restore: plan.restore });
    if (decision.fightMove) this.#fightMove(tried.fightKey, ref, target.observed);
    if (decision.attempt === "forget") this.#retries.succeeded(tried.retryKey);
    else if (result.state === "failed") {
      this.#retries.failed(tried.retryKey, tried.attempt, result, decision.attempt === "terminal", scopeOf(ref));
    }
    if (result.state !== "failed") this.caches.rewritten(target.resource, tried.objectKey);
    logged(result);
    return result;
  }

  /** Performs a create or update plan; the result, and what the try came to for the retry policy. */
  async #write(
    target: SyncTarget,
    plan: SyncPlan & { kind: "create" | "update" },
    itemKey: string,
    fail: (e: unknown) => ItemResult,
  ): Promise<{ result: ItemResult; outcome: TryOutcome }> {
    const write = this.#writeTarget(target, itemKey, plan);
    const objectKey = `${target.namespace}/${target.desired.metadata!.name}`;
    this.caches.beginWrite(target.resource, objectKey);
    try {
      const applied = plan.kind === "create"
        ? await this.#applier.create(write)
        : await this.#applier.update(write, plan.live, plan.reason);
      if (applied.replaced) this.#reportReplace(target, applied.replaced);
      return { result: { state: "synced", action: applied.action, reason: applied.reason }, outcome: "done" };
    } catch (e) {
      return { result: fail(e), outcome: tryOutcomeOf(e) };
    } finally {
      this.caches.endWrite(target.resource, objectKey);
    }
  }

  #reportReplace(t: SyncTarget, replaced: { why: "immutable" | "forceRecreate"; finalizersRemoved: string[] }): void {
    this.hooks.onReplace?.(t.cfg.key, replaced.why);
    const removed = replaced.finalizersRemoved;
    if (!removed.length) return;
    const message = `SyncConfig ${t.cfg.key}: removed finalizer${removed.length > 1 ? "s" : ""} ${
      removed.join(", ")
    } of ${t.resource.kind} ${t.namespace}/${t.desired.metadata!.name}, which its item does not set, to replace it`;
    log.warn("{message}", { syncConfig: t.cfg.key, namespace: t.namespace, message });
    this.hooks.onFinalizersRemoved?.(t.cfg.key, message);
  }

  async deleteItem(ref: ItemRef, item: DeleteItemSpec): Promise<ItemResult> {
    const name = renderTemplate(item.name, ref.namespace);
    const site = deleteItemSite(ref, item, name);
    const fail = failure(site);
    if (item.problem) return specProblem(ref.cfg.key, `.spec.deleteItems[${item.index}]`, item.problem);
    const resource = await this.#resolve(item.apiVersion, item.kind)
      .catch((e: unknown) => e instanceof Error ? e : new Error(String(e)));
    if (resource instanceof Error) return fail(resource);
    const cache = this.caches.existing(resource);
    if (!(await ready(cache))) return fail(new Error(cacheProblem(resource, cache.lastError)));
    const key = `${ref.namespace}/${name}`;
    const plan = planDeleteItem({ ...ref, item, existing: cache.get(key) }, this.#view);
    const logged = (result?: ItemResult) => logDecision(site, () => deletePlanWords(plan), result);
    if (plan.kind !== "delete") {
      logged();
      return plan.kind === "absent" ? { state: "absent" } : plan.result;
    }
    // Our own delete: its watch event (of an object espejo labelled once) is no one else's removal, nor a fight.
    this.caches.beginWrite(resource, key);
    let result: ItemResult = { state: "absent" }; // until the delete answers
    try {
      result = { state: await this.#applier.delete(resource, ref.namespace, name, plan.uid, ref.cfg.writeAs?.as) };
      cache.forget(key);
      this.#retries.succeeded(plan.retryKey);
    } catch (e) {
      const failed = fail(e);
      this.#retries.failed(plan.retryKey, plan.attempt, failed, failed.terminal, scopeOf(ref));
      result = failed;
    } finally {
      this.caches.endDelete(resource, key, result.state === "deleted");
    }
    logged(result);
    return result;
  }

  /** The SyncConfig went or changed generation: its retries start over, and what its items learnt goes. */
  forgetConfig(cfgKey: string): void {
    this.#retries.forgetConfig(cfgKey);
    this.#serverAdds.forgetConfig(cfgKey);
  }

  /** The namespace went: its retries start over. */
  forgetNamespace(namespace: string): void {
    this.#retries.forgetNamespace(namespace);
  }

  #writeTarget(t: SyncTarget, itemKey: string, plan: SyncPlan & { kind: "create" | "update" }): WriteTarget {
    const cache = this.caches.managed(t.resource);
    return {
      cfgKey: t.cfg.key,
      as: t.cfg.writeAs?.as,
      replace: plan.replace,
      contested: plan.kind === "update" && plan.contested,
      resource: t.resource,
      namespace: t.namespace,
      desired: t.desired,
      sink: {
        written: (reply) => this.#stored(cache, reply, t, itemKey),
        deleted: (objectKey) => cache.forget(objectKey),
      },
    };
  }

  /**
   * Puts the reply of our write into the cache as in sync, and makes it the object's baseline: it is what the
   * server made of the desired object (see lib/model/drift.ts). The watch event of our own write carries the same version
   * and is not reported again. What the server added to it is remembered for the item (see {@link extrasHash}).
   */
  #stored(cache: Reflector<CachedObject>, written: KubeObject, t: SyncTarget, itemKey: string): void {
    const objectKey = `${t.namespace}/${written.metadata?.name}`;
    this.caches.ownVersion(t.resource, objectKey, written.metadata?.resourceVersion ?? "");
    cache.upsert(written);
    const hash = t.desired.metadata?.annotations?.[HASH_ANNOTATION];
    const stored = cache.get(objectKey);
    if (hash && stored && stored.resourceVersion === written.metadata?.resourceVersion) {
      acceptWritten(stored, written, hash);
    }
    this.#serverAdds.learn(itemKey, () => extrasHash(t.desired, written));
  }

  /** A restore was tried (written or refused): one move of the fight over the object. */
  #fightMove(fightKey: string, ref: ItemRef, observed: CachedObject | undefined): void {
    const restores = this.#fights.restored(fightKey);
    if (restores < 2) return;
    this.hooks.onFight?.(ref.cfg.key);
    if (restores === 2) {
      log.warn(
        "Fight over {object} in namespace {namespace}: changed again by field manager {manager} after espejo " +
          "restored it for SyncConfig {syncConfig}; restores now back off up to {maxDelayMs} ms",
        {
          object: fightKey,
          namespace: ref.namespace,
          manager: observed ? observed.manager ?? "(unknown)" : "(it was deleted or unlabelled)",
          syncConfig: ref.cfg.key,
          maxDelayMs: this.hooks.maxFightDelayMs ?? MAX_FIGHT_DELAY_MS,
        },
      );
    }
  }

  /** Reads one object into its cache with its content; undefined when it is gone. */
  async #read(cache: Reflector<CachedObject>, path: string): Promise<CachedObject | undefined> {
    try {
      const raw = await this.client.request<KubeObject>({ method: "GET", path });
      cache.upsert(raw);
      return cache.get(`${raw.metadata?.namespace}/${raw.metadata?.name}`);
    } catch (e) {
      if (isNotFound(e)) return undefined;
      throw e;
    }
  }

  async #resolve(apiVersion: string, kind: string): Promise<ResourceInfo> {
    return namespacedOnly(await this.discovery.resolve(apiVersion, kind), apiVersion);
  }
}

const scopeOf = (ref: ItemRef) => ({ cfgKey: ref.cfg.key, namespace: ref.namespace });
