/**
 * Writes SyncConfig statuses beside the workers, one flush at a time, as their SyncConfigs' own work ends (see
 * {@link StatusSchedule}): a status does not wait behind other SyncConfigs' units in the queue. A status is written
 * (merge patch on `/status`) only when it differs from the stored one; the Events of the flush go out with it.
 */
import { getLogger } from "@logtape/logtape";
import type { KubeClient } from "../kube/client.ts";
import { isConflict } from "../kube/errors.ts";
import type { Reflector } from "../kube/reflector.ts";
import type { Metrics } from "../metrics/metrics.ts";
import type { NamespaceOutcome } from "../sync/namespace_sync.ts";
import { invalidStatus, type Outcome, statusChanged, type SyncConfigStatus, syncedStatus } from "../model/status.ts";
import { StatusSchedule } from "./status_schedule.ts";
import type { SyncEvents } from "./sync_events.ts";
import { patchSyncConfigStatus } from "./syncconfig_client.ts";
import type { CompileResult, SyncConfig } from "../model/syncconfig.ts";

const log = getLogger(["espejo", "controller"]);

/** How long the writer waits after a kick, to write once for units that end together. */
const STATUS_GATHER_MS = 50;

export interface StatusDeps {
  client: KubeClient;
  syncConfigs: Reflector<SyncConfig>;
  compiled: (key: string) => { result: CompileResult } | undefined;
  outcomes: (key: string) => Iterable<NamespaceOutcome>;
  events: SyncEvents;
  metrics: Metrics;
  now?: () => Date;
}

export class StatusWriter {
  readonly schedule = new StatusSchedule();
  #wanted = false;
  #wake?: () => void;

  constructor(private readonly deps: StatusDeps) {}

  /** Asks for a flush of the statuses that are ready (cheap; any number of calls become one flush). */
  kick(): void {
    this.#wanted = true;
    this.#wake?.();
  }

  /**
   * Writes statuses as their SyncConfigs' own work ends, one flush at a time, beside the workers: a status does not
   * wait behind other SyncConfigs' units in the queue. Stops once `signal` aborted and the last kick is served.
   */
  async run(signal: AbortSignal): Promise<void> {
    for (;;) {
      if (!this.#wanted) {
        // Woken by a kick, or when a status held back by its SyncConfig's ongoing work must be written anyway.
        const holdMs = this.schedule.untilHoldEndsMs();
        let timer: ReturnType<typeof setTimeout> | undefined;
        await new Promise<void>((resolve) => {
          this.#wake = resolve;
          if (holdMs !== undefined) timer = setTimeout(resolve, holdMs);
        });
        clearTimeout(timer);
      }
      this.#wake = undefined;
      // Gathers the kicks of units finishing at about the same time into one flush.
      await new Promise((r) => setTimeout(r, STATUS_GATHER_MS));
      this.#wanted = false;
      try {
        await this.#flushStatus();
      } catch (e) {
        log.error("Unexpected error while writing statuses: {error}", { error: String(e) });
      }
      if (signal.aborted && !this.#wanted) return;
    }
  }

  /** Writes the status of every SyncConfig whose outcome changed, and only if it differs from what is stored. */
  async #flushStatus(): Promise<void> {
    const keys = this.schedule.takeReady();
    const now = (this.deps.now?.() ?? new Date()).toISOString().replace(/\.\d+Z$/, "Z");
    for (const key of keys) {
      const sc = this.deps.syncConfigs.get(key);
      const entry = this.deps.compiled(key);
      if (!sc || !entry) continue;
      const current = sc.status as SyncConfigStatus | undefined;
      let next: SyncConfigStatus;
      let errors: string[] = [];
      if (!entry.result.ok) {
        next = invalidStatus(current, entry.result.message, now);
      } else {
        const total: Outcome = { synced: 0, deleted: 0, failed: 0, errors: [] };
        for (const o of this.deps.outcomes(key) ?? []) {
          total.synced += o.synced;
          total.deleted += o.deleted;
          total.failed += o.failed;
          total.errors.push(...o.errors);
        }
        next = syncedStatus(current, total, now);
        errors = total.errors;
      }
      await this.deps.events.emit(key, sc, entry.result, errors);
      this.deps.metrics.items.set({ syncconfig: key, state: "synchronized" }, next.synchronizedItemCount);
      this.deps.metrics.items.set({ syncconfig: key, state: "deleted" }, next.deletedItemCount);
      this.deps.metrics.items.set({ syncconfig: key, state: "failed" }, next.failedItemCount);
      this.deps.metrics.invalid.set({ syncconfig: key }, entry.result.ok ? 0 : 1);
      if (!statusChanged(current, next)) continue;
      const [namespace, name] = key.split("/");
      // The whole conditions list is replaced, foreign conditions included (kept from `current`): the
      // resourceVersion makes the patch fail with a conflict rather than drop a condition written meanwhile.
      const body = { metadata: { resourceVersion: sc.metadata?.resourceVersion }, status: next };
      try {
        const updated = await patchSyncConfigStatus(this.deps.client, { namespace, name }, body, {
          urgent: true, // a status does not wait behind other SyncConfigs' queued writes
          contentType: "application/merge-patch+json",
        });
        this.deps.syncConfigs.upsert(updated);
      } catch (e) {
        this.schedule.markDirty(key);
        if (isConflict(e) && await this.#refresh(namespace, name)) {
          // Someone else wrote the SyncConfig since it was cached: computed again from the copy just read.
          log.debug("Status of SyncConfig {syncConfig} changed meanwhile, writing it again", { syncConfig: key });
          this.kick();
          continue;
        }
        log.warn("Could not write the status of SyncConfig {syncConfig}: {error}", {
          syncConfig: key,
          error: String(e),
        });
        setTimeout(() => this.kick(), 2_000);
      }
    }
  }

  /** Reads the SyncConfig into the cache after a conflict (one GET per conflict; the watch may lag). */
  async #refresh(namespace: string, name: string): Promise<boolean> {
    try {
      const path = `/apis/sync.appuio.ch/v1alpha1/namespaces/${encodeURIComponent(namespace)}/syncconfigs/${
        encodeURIComponent(name)
      }`;
      this.deps.syncConfigs.upsert(await this.deps.client.request<object>({ method: "GET", path, urgent: true }));
      return true;
    } catch {
      return false;
    }
  }
}
