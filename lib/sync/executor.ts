/**
 * Syncs the items of one SyncConfig in one namespace, each in four calls: gather what the planner needs (the resource
 * from discovery, a filled cache, the content of an object kept without it), plan (the pure lib/sync/planner.ts),
 * apply (lib/sync/applier.ts), and tell the books what the try came to (lib/sync/item_books.ts: retries, fights, what
 * the server adds to each item's writes, the learning gate). Each item succeeds or fails on its own
 * (lib/sync/failures.ts names and classifies failures). A read or write of a large object is done only in its
 * namespace's turn at such work (lib/sync/large_gate.ts); when the turn is another's, the item is left for later.
 */
import type { KubeClient } from "../kube/client.ts";
import type { Reflector } from "../kube/reflector.ts";
import { Discovery, namespacedOnly, objectPath, type ResourceInfo } from "../kube/discovery.ts";
import { isNotFound } from "../kube/errors.ts";
import { extrasHash } from "../model/drift.ts";
import type { KubeObject } from "../kube/objects.ts";
import { cacheProblem, ready, type ResourceCaches } from "./resource_caches.ts";
import type { DeleteItemSpec, SyncItemSpec } from "../model/syncconfig.ts";
import { type ExecutorHooks, type ItemRef, reportReplace } from "./executor_hooks.ts";
import { renderTemplate } from "../model/template.ts";
import { deletePlanWords, logDecision, syncPlanWords } from "./plan_words.ts";
import { Applier, type WriteTarget } from "./applier.ts";
import { LargeGate } from "./large_gate.ts";
import type { CachedObject } from "./cached_object.ts";
import { desiredObject } from "./desired.ts";
import { type Fail, failure, type ItemResult, specProblem, tryOutcomeOf } from "./failures.ts";
import { ItemBooks } from "./item_books.ts";
import {
  deleteItemSite,
  type ItemKeys,
  planDeleteItem,
  planSyncItem,
  type PlanView,
  syncItemSite,
  type SyncPlan,
  type SyncTarget,
} from "./planner.ts";
import { MAX_FIGHT_DELAY_MS, type TryOutcome } from "./retry_policy.ts";
import { acceptWritten, remember } from "./verdict.ts";
import { HASH_ANNOTATION } from "../model/markers.ts";

type Planned = { plan: SyncPlan; keys: ItemKeys };

/** An item's target, and how to have its cached entry packed once the planner has judged it. */
interface Gathered {
  target: SyncTarget;
  settled: () => void;
}

/** An item whose read or write of a large object waits for its namespace's turn (which queues the namespace). */
const WAITING: ItemResult = { state: "synced", action: "none", waiting: true };

export class Executor {
  /** Retries, fights, what the server adds and the learning gate (lib/sync/item_books.ts). */
  readonly #books: ItemBooks;
  readonly #applier: Applier;
  readonly #view: PlanView;
  readonly #large: LargeGate;

  constructor(
    private readonly client: KubeClient,
    private readonly discovery: Discovery,
    private readonly caches: ResourceCaches,
    private readonly hooks: ExecutorHooks = {},
  ) {
    this.#books = new ItemBooks(hooks.maxFightDelayMs ?? MAX_FIGHT_DELAY_MS, hooks.onFight);
    const claims = hooks.claims ?? (() => false);
    this.#applier = new Applier(client, claims, hooks.onWrite);
    this.#large = hooks.large ?? new LargeGate();
    this.#view = {
      ...this.#books.view,
      claims,
      removedByOther: (r, objectKey) => this.caches.removedByOther(r, objectKey),
    };
  }

  /** One syncItem in one namespace: gather what the planner needs, plan, apply, and tell the books what came of it. */
  async syncItem(ref: ItemRef, item: SyncItemSpec): Promise<ItemResult> {
    if (item.problem) return specProblem(ref.cfg.key, `.spec.syncItems[${item.index}]`, item.problem);
    const site = syncItemSite(ref, item, renderTemplate(item.name, ref.namespace));
    const fail = failure(site);
    let gathered: Gathered | undefined;
    try {
      gathered = await this.#gather(ref, item);
    } catch (e) {
      return fail(e);
    }
    if (!gathered) {
      logDecision(site, () => "read later: it is large, and the turn at large objects is another namespace's");
      return WAITING;
    }
    // Planned and applied in one turn of the event loop (no await between them) unless it waits for the item's
    // learning write: another namespace's try of the item must see this one's learning write when it plans.
    let planned = this.#plan(gathered);
    const learning = this.#learningFor(planned);
    if (learning) {
      await learning;
      planned = this.#plan(gathered);
    }
    const { plan, keys } = planned;
    const logged = (result?: ItemResult) => logDecision(site, () => syncPlanWords(plan), result);
    if (plan.kind !== "create" && plan.kind !== "update") {
      logged();
      if (plan.kind === "none") this.#books.inSync(keys);
      if (plan.kind === "none") return { state: "synced", action: "none" };
      return plan.kind === "hold" ? { state: "synced", action: "none", retryInMs: plan.retryInMs } : plan.result;
    }
    const { target } = gathered;
    const applied = await this.#apply(target, plan, keys, fail);
    if (!applied) {
      logged(WAITING);
      return WAITING;
    }
    const { result, outcome } = applied;
    this.#books.afterTry({ ref, keys, outcome, restore: plan.restore, result, observed: target.observed });
    if (result.state !== "failed") this.caches.rewritten(target.resource, keys.objectKey);
    logged(result);
    return result;
  }

  /**
   * The item's target: its kind's resource, the desired object and the object as cached (its cache filled); undefined
   * when it must be read, is large, and the turn at large objects is not its namespace's.
   */
  async #gather(ref: ItemRef, item: SyncItemSpec): Promise<Gathered | undefined> {
    const resource = await this.#resolve(item.apiVersion, item.kind);
    const { object: desired, hash } = await desiredObject(ref.cfg, item, ref.namespace);
    const cache = this.caches.managed(resource);
    if (!(await ready(cache))) throw new Error(cacheProblem(resource, cache.lastError));
    const objectKey = `${ref.namespace}/${desired.metadata!.name}`;
    let observed = cache.get(objectKey);
    // Kept without content while no item named it (anyone can label their objects): read it once now.
    if (observed?.contentless) {
      const read = () => this.#read(cache, objectPath(resource, ref.namespace, desired.metadata!.name!));
      // A large one holds MiBs while it is read: in the namespace's turn at large objects.
      const got = observed.large ? await this.#large.tryRun(ref.namespace, read) : { value: await read() };
      if (!got) return undefined;
      observed = got.value;
    }
    const target: SyncTarget = { ...ref, item, resource, desired, hash, observed };
    // Judged by the planner after an await or two (the read, the learning gate): packed then, not at its next get.
    return { target, settled: () => cache.settled(objectKey, target.observed) };
  }

  /**
   * The write to wait for before this plan: an update of an object whose server-added fields are not explained yet
   * waits for the item's write that is learning them, if one is under way (see lib/sync/item_books.ts).
   */
  #learningFor({ plan, keys }: Planned): Promise<void> | undefined {
    return plan.kind === "update" && plan.unexplained ? this.#books.learning(keys.itemKey) : undefined;
  }

  #plan({ target, settled }: Gathered): Planned {
    const { plan, memo, keys } = planSyncItem(target, this.#view);
    // Put back only what learnt something: a packed entry put back unchanged would be packed and rewritten for nothing.
    if (target.observed && memo) {
      remember(target.observed, memo);
      settled();
    }
    return { plan, keys };
  }

  /**
   * Writes the plan; an update with unexplained server-added fields is the item's learning write. An update of an
   * object whose ownerReferences the cache did not keep (a tenant added thousands) reads, sends and gets back MiBs of
   * them: in the namespace's turn at large objects, or undefined (nothing written) when the turn is another's.
   */
  #apply(
    target: SyncTarget,
    plan: SyncPlan & { kind: "create" | "update" },
    keys: ItemKeys,
    fail: Fail,
  ): Promise<{ result: ItemResult; outcome: TryOutcome } | undefined> {
    const write = () => this.#write(target, plan, keys.itemKey, fail);
    const written = plan.kind === "update" && plan.live.referencesUnkept
      ? this.#large.tryRun(target.namespace, write).then((done) => done?.value)
      : write();
    if (plan.kind === "update" && plan.unexplained) this.#books.learnFrom(keys.itemKey, written);
    return written;
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
      if (applied.replaced) reportReplace(this.hooks, target, applied.replaced);
      return { result: { state: "synced", action: applied.action, reason: applied.reason }, outcome: "done" };
    } catch (e) {
      return { result: fail(e), outcome: tryOutcomeOf(e) };
    } finally {
      this.caches.endWrite(target.resource, objectKey);
    }
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
    let outcome: TryOutcome = "done";
    try {
      result = { state: await this.#applier.delete(resource, ref.namespace, name, plan.uid, ref.cfg.writeAs?.as) };
      cache.forget(key);
    } catch (e) {
      result = fail(e);
      outcome = tryOutcomeOf(e);
    } finally {
      this.caches.endDelete(resource, key, result.state === "deleted");
    }
    const keys = { retryKey: plan.retryKey, attempt: plan.attempt };
    this.#books.afterTry({ ref, keys, outcome, restore: false, result });
    logged(result);
    return result;
  }

  /** The SyncConfig went or changed generation: its retries start over, and what its items learnt goes. */
  forgetConfig(cfgKey: string): void {
    this.#books.forgetConfig(cfgKey);
  }

  /** The namespace went: its retries start over. */
  forgetNamespace(namespace: string): void {
    this.#books.forgetNamespace(namespace);
  }

  #writeTarget(t: SyncTarget, itemKey: string, plan: SyncPlan & { kind: "create" | "update" }): WriteTarget {
    const cache = this.caches.managed(t.resource);
    return {
      cfgKey: t.cfg.key,
      trusted: t.cfg.trusted,
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
    this.#books.learnt(itemKey, () => extrasHash(t.desired, written));
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
