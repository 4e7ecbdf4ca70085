/**
 * Settling the prune finalizer of a SyncConfig, after a change of it and when a look is due: added while pruning is on
 * for it, removed once pruning is off, and, for a SyncConfig being deleted, removed once nothing it created is left
 * (lib/sync/prune_decisions.ts `finalizerAction` decides which). The patch is a merge patch at the version seen, so
 * that a change meanwhile fails (409) instead of being overwritten; espejo's own status write in between is the usual
 * one.
 */
import { getLogger } from "@logtape/logtape";
import type { KubeClient } from "../kube/client.ts";
import { isConflict, isNotFound } from "../kube/errors.ts";
import type { Reflector } from "../kube/reflector.ts";
import { PRUNE_FINALIZER } from "../model/markers.ts";
import type { SyncConfig } from "../model/syncconfig.ts";
import { finalizerAction } from "../sync/prune_decisions.ts";
import {
  FINALIZER_CONFLICT_BASE_MS,
  FINALIZER_FAILURE_BASE_MS,
  PRUNE_RELOOK_BASE_MS,
  type WorkFacts,
} from "../sync/retry_policy.ts";
import { patchSyncConfig } from "../sync/syncconfig_client.ts";
import type { PrunerParts, PruneStep } from "./prune_step.ts";
import type { Trigger, WorkItem } from "./work_items.ts";

const log = getLogger(["espejo", "prune"]);

export interface PruneFinalizerDeps {
  client: KubeClient;
  syncConfigs: Pick<Reflector<SyncConfig>, "get" | "upsert">;
  /** Where each SyncConfig stands for pruning. */
  step: Pick<PruneStep, "scope" | "enabled" | "isDeleting" | "configOf">;
  pruner: PrunerParts;
  enqueue: (item: WorkItem, trigger: Trigger) => void;
}

const SETTLED: WorkFacts = { retry: false };

export class PruneFinalizer {
  constructor(private readonly d: PruneFinalizerDeps) {}

  /**
   * After a change of the SyncConfig under `key`, and when a look is due: the finalizer follows pruning, the
   * namespaces where it created objects are queued (those it selects are queued anyway), and a deleted one is
   * released once nothing it created is left. Returns whether to look again (backing off, see the retry policy).
   */
  async settle(key: string): Promise<WorkFacts> {
    const sc = this.d.syncConfigs.get(key);
    const { pruner } = this.d;
    if (!sc) {
      pruner.unindexCreatedBy(key); // gone for good (pruned first, if it pruned: the finalizer held it)
      return SETTLED;
    }
    const deleting = this.d.step.isDeleting(key);
    const present = sc.metadata?.finalizers?.includes(PRUNE_FINALIZER) === true;
    const prunes = deleting ? this.d.step.scope(key, false).kind === "deleting" : this.d.step.enabled(key);
    // What it created stays in place and is no candidate any more: its index entries go (pruning turning on indexes
    // what is there again).
    if (!prunes) pruner.unindexCreatedBy(key);
    switch (finalizerAction(deleting, present, prunes)) {
      case "none":
        return SETTLED;
      case "remove":
        return await this.#set(key, sc, false) ?? SETTLED;
      case "add": {
        const failed = await this.#set(key, sc, true);
        if (failed) return failed;
        return this.#watch(key, pruner);
      }
      case "watch":
        return this.#watch(key, pruner);
      case "release":
        log.info("SyncConfig {syncConfig} deleted without pruning; objects it created are left in place", {
          syncConfig: key,
        });
        return await this.#set(key, sc, false) ?? SETTLED;
      case "prune":
        return await this.#pruneLeft(key, sc, pruner);
    }
  }

  /** Pruning is on: what it created is indexed (objects cached while it did not prune were not), and queued. */
  #watch(key: string, pruner: PrunerParts): WorkFacts {
    pruner.indexCreatedBy(key);
    for (const namespace of pruner.namespacesCreatedBy(key)) {
      this.d.enqueue({ kind: "namespace", name: namespace }, "syncconfig");
    }
    return SETTLED;
  }

  /** A deleted SyncConfig that prunes: the namespaces where something of it is left are queued; released once none. */
  async #pruneLeft(key: string, sc: SyncConfig, pruner: PrunerParts): Promise<WorkFacts> {
    const problem = await pruner.watchItemKinds(this.d.step.configOf(key)!, true);
    const left = problem ? [] : pruner.namespacesCreatedBy(key).filter((ns) => {
      const { created, listing } = pruner.createdIn(ns); // checks the entries (and drops the stale ones)
      return listing || created.has(key);
    });
    if (problem) {
      const syncConfig = key;
      log.warn("SyncConfig {syncConfig} is being deleted but cannot be pruned yet: {problem}", { syncConfig, problem });
    } else if (!left.length) {
      return await this.#set(key, sc, false) ?? SETTLED;
    }
    for (const namespace of left) this.d.enqueue({ kind: "namespace", name: namespace }, "syncconfig");
    // Objects that go by themselves (a namespace deleted, a tenant) leave no trace: look again, backing off.
    return { retry: true, baseMs: PRUNE_RELOOK_BASE_MS };
  }

  /** Adds or removes the finalizer, at the version seen; when that failed, when to try again. */
  async #set(key: string, sc: SyncConfig, present: boolean): Promise<WorkFacts | undefined> {
    const others = (sc.metadata?.finalizers ?? []).filter((f) => f !== PRUNE_FINALIZER);
    const finalizers = present ? [...others, PRUNE_FINALIZER] : others;
    const [namespace, name] = key.split("/");
    try {
      const body = { metadata: { finalizers, resourceVersion: sc.metadata?.resourceVersion } };
      const reply = await patchSyncConfig(this.d.client, { namespace, name }, body, {
        urgent: true,
        contentType: "application/merge-patch+json",
      });
      this.d.syncConfigs.upsert(reply);
      log.info(`${present ? "Added" : "Removed"} finalizer {finalizer} of SyncConfig {syncConfig}`, {
        finalizer: PRUNE_FINALIZER,
        syncConfig: key,
      });
      return undefined;
    } catch (e) {
      if (isNotFound(e)) return undefined;
      // A conflict is mostly espejo's own status write in between: try again soon. Anything else backs off.
      if (!isConflict(e)) {
        log.warn("Could not update the finalizers of SyncConfig {syncConfig}: {error}", {
          syncConfig: key,
          error: String(e),
        });
      }
      return { retry: true, baseMs: isConflict(e) ? FINALIZER_CONFLICT_BASE_MS : FINALIZER_FAILURE_BASE_MS };
    }
  }
}
