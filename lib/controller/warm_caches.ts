/**
 * Fills the caches of every kind the valid SyncConfigs' items name as soon as the namespace and SyncConfig caches are
 * synced, instead of when a unit first needs one: on a standby (standby.ts) so that it acts at once when it takes the
 * Lease, with nothing to list; on a leader so that a start lists every kind at once. The SyncConfigs are compiled
 * first (ConfigChanges.catchUp), because a cache keeps content and judges objects as they arrive only for objects an
 * item names. syncItems get the managed-object caches, deleteItems the deletion-candidate ones (resource_caches.ts).
 *
 * What it asks of the API server: the discovery documents of the items' group versions (one GET each, shared with the
 * executor, which then asks for none) and each cache's list and watch. A kind that is not served or is cluster-scoped
 * is left to its items, which report it; one whose discovery failed otherwise is tried again while standing by.
 */
import { getLogger } from "@logtape/logtape";
import { sleep } from "../kube/backoff.ts";
import { type Discovery, namespacedOnly, UnknownKindError } from "../kube/discovery.ts";
import type { Metrics } from "../metrics/metrics.ts";
import type { CompiledSyncConfig } from "../model/syncconfig.ts";
import { ready } from "../sync/cache_ready.ts";
import type { ResourceCaches } from "../sync/resource_caches.ts";
import { WARM_DISCOVERY_RETRY_MS } from "../sync/retry_policy.ts";
import type { ConfigChanges } from "./config_changes.ts";
import type { Standby } from "./standby.ts";

const log = getLogger(["espejo", "controller"]);

export interface WarmDeps {
  /** The valid compiled SyncConfigs (Registry.valid). */
  valid: () => Iterable<CompiledSyncConfig>;
  configs: Pick<ConfigChanges, "catchUp" | "changed">;
  discovery: Pick<Discovery, "resolve">;
  caches: Pick<ResourceCaches, "managed" | "existing" | "sizes">;
  metrics: Pick<Metrics, "cacheObjects" | "registry">;
  standby: Pick<Standby, "leading">;
  /** Aborted when the controller stops. */
  signal: AbortSignal;
}

interface Kind {
  apiVersion: string;
  kind: string;
  /** Named by a deleteItem (a deletion-candidate cache), else by a syncItem (a managed-object cache). */
  deleting: boolean;
}

export class WarmCaches {
  #started = false;
  /** A standby's next look at kinds whose discovery failed is pending. */
  #retrying = false;

  constructor(private readonly d: WarmDeps) {}

  /** The namespace and SyncConfig caches are synced: every SyncConfig is compiled and its kinds' caches fill. */
  start(): void {
    if (this.#started) return;
    this.#started = true;
    this.d.configs.catchUp();
    void this.#warm();
    // A standby's gauges of its managed caches, set when scraped (a leader sets them before each unit). Not the
    // SyncConfig cache's: EspejoStalled reads that series as "this process should be passing", and a standby does not.
    this.d.metrics.registry.onCollect(() => {
      if (!this.d.standby.leading) this.#observe();
    });
  }

  /**
   * A SyncConfig changed while standing by: compiled now, as a leader's unit would, so that the caches judge its
   * objects as they arrive, and the caches of its kinds fill (those of kinds no SyncConfig names any more are
   * stopped by the compile). Called from a watch callback: a failure is logged, not thrown.
   */
  syncConfigChanged(key: string): void {
    if (!this.#started) return; // compiled at the start
    try {
      this.d.configs.changed(key);
    } catch (e) {
      log.error("Unexpected error while compiling {key}: {error}", { key, error: String(e) });
    }
    void this.#warm();
  }

  async #warm(): Promise<void> {
    const { caches, discovery, signal } = this.d;
    let failed = false;
    const started = await Promise.all([...kindsOf(this.d.valid())].map(async ({ apiVersion, kind, deleting }) => {
      try {
        const r = namespacedOnly(await discovery.resolve(apiVersion, kind), apiVersion);
        return { deleting, cache: deleting ? caches.existing(r) : caches.managed(r) };
      } catch (e) {
        if (!(e instanceof UnknownKindError)) failed = true;
        log.debug("No cache for {kind} ({apiVersion}) before a unit needs it: {error}", {
          kind,
          apiVersion,
          error: e instanceof Error ? e.message : String(e),
        });
        return undefined;
      }
    }));
    if (signal.aborted) return;
    if (failed && !this.d.standby.leading && !this.#retrying) {
      // A standby runs no workers, so the queue cannot bring this back: a wait that the controller's stop ends.
      this.#retrying = true;
      void sleep(WARM_DISCOVERY_RETRY_MS, signal).then(() => {
        this.#retrying = false;
        if (!signal.aborted) void this.#warm();
      });
    }
    const filling = started.filter((s) => s !== undefined && !s.cache.hasSynced).map((s) => s!);
    if (!filling.length) return;
    const filled = await Promise.all(filling.map((s) => ready(s.cache)));
    if (signal.aborted) return;
    const count = (deleting: boolean) =>
      filling.reduce((n, s, i) => n + (filled[i] && s.deleting === deleting ? s.cache.size : 0), 0);
    const standby = !this.d.standby.leading;
    log.info(
      "Filled the caches of {kinds} kinds that SyncConfigs name: {objects} objects espejo manages, {candidates} " +
        "deletion candidates{role}",
      {
        kinds: filled.filter(Boolean).length,
        objects: count(false),
        candidates: count(true),
        standby,
        role: standby ? "; standing by until this replica takes the Lease" : "",
      },
    );
  }

  #observe(): void {
    for (const [cache, size] of Object.entries(this.d.caches.sizes())) this.d.metrics.cacheObjects.set({ cache }, size);
  }
}

/** The kinds the items of `configs` name, each once (by apiVersion as written: discovery resolves each spelling). */
function kindsOf(configs: Iterable<CompiledSyncConfig>): Iterable<Kind> {
  const kinds = new Map<string, Kind>();
  for (const cfg of configs) {
    for (const i of cfg.syncItems) {
      if (!i.problem) kinds.set(`sync|${i.apiVersion}|${i.kind}`, { ...i, deleting: false });
    }
    for (const i of cfg.deleteItems) {
      if (!i.problem) kinds.set(`delete|${i.apiVersion}|${i.kind}`, { ...i, deleting: true });
    }
  }
  return [...kinds.values()].map(({ apiVersion, kind, deleting }) => ({ apiVersion, kind, deleting }));
}
