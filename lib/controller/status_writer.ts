/**
 * Writes SyncConfig statuses beside the workers, one flush at a time, as their SyncConfigs' own work ends (see
 * {@link StatusSchedule}): a status does not wait behind other SyncConfigs' units in the queue. A status is written
 * (merge patch on `/status`) only when it differs from the stored one; the Events of the flush (sync_events.ts) and
 * the SyncConfig's gauges (Metrics.observeStatus) go out with it. Callers tell it what happened through one method,
 * {@link StatusWriter.heard}, never when to write; a failed write comes back through the work queue's back-off.
 */
import { getLogger } from "@logtape/logtape";
import type { KubeClient } from "../kube/client.ts";
import { isConflict } from "../kube/errors.ts";
import type { Reflector } from "../kube/reflector.ts";
import type { Metrics } from "../metrics/metrics.ts";
import {
  invalidStatus,
  type ItemCounts,
  progressStatus,
  statusChanged,
  type SyncConfigStatus,
  syncedGeneration,
  syncedStatus,
} from "../model/status.ts";
import { afterWork, STATUS_RETRY_BASE_MS } from "../sync/retry_policy.ts";
import type { WorkQueue } from "./queue.ts";
import { StatusSchedule } from "./status_schedule.ts";
import type { SyncEvents } from "./sync_events.ts";
import { patchSyncConfigStatus } from "../sync/syncconfig_client.ts";
import type { CompileResult, SyncConfig } from "../model/syncconfig.ts";
import { decodeSyncConfig, syncConfigPath } from "../sync/syncconfig_api.ts";
import { PRIORITY, type Trigger, workKey } from "./work_items.ts";

const log = getLogger(["espejo", "controller"]);

/** How long the writer waits after a kick, to write once for units that end together. */
const STATUS_GATHER_MS = 50;

export interface StatusDeps {
  client: KubeClient;
  syncConfigs: Reflector<SyncConfig>;
  /** The compiled SyncConfig: the generation its status describes is this one, not the cached object's. */
  compiled: (key: string) => { result: CompileResult; generation: number } | undefined;
  /** The outcomes of a SyncConfig in every namespace it targets, added up. */
  total: (key: string) => ItemCounts;
  events: SyncEvents;
  metrics: Metrics;
  /** The work queue: a failed write comes back through its back-off, as every retry does ({@link retryDue}). */
  retries: Pick<WorkQueue<string, Trigger>, "addRateLimited" | "forget">;
  now?: () => Date;
}

/**
 * What happened that a SyncConfig's status may show. The callers say what happened, never when to write: that is the
 * schedule's (status_schedule.ts).
 */
export type StatusFact =
  /** `namespace` was queued as work of each of `cfgKeys`: their statuses wait for its unit. */
  | { kind: "queued"; cfgKeys: Iterable<string>; namespace: string }
  /**
   * A unit of `namespace` finished, or the namespace went: it is no SyncConfig's pending work any more, except for
   * those in `stale` (changed while it ran: their new generation's unit is queued).
   */
  | { kind: "finished"; namespace: string; stale?: readonly string[] }
  /** What the status of `cfgKey` shows may have changed (its counts somewhere, an interval pass): it is written. */
  | { kind: "changed"; cfgKey: string }
  /**
   * The SyncConfig was compiled (a new generation, or it came): its status is written. An invalid one's queued work
   * no longer counts (its namespaces sync nothing for it), so its Invalid condition waits for none of it.
   */
  | { kind: "compiled"; cfgKey: string; valid: boolean }
  /** The namespaces `cfgKey` selects are being queued: its status waits until they all are (`queuedAll`). */
  | { kind: "queueing"; cfgKey: string }
  /** Every namespace `cfgKey` selects is queued (or none is to be): its status waits for their units only. */
  | { kind: "queuedAll"; cfgKey: string }
  /** The back-off after a failed status write of `cfgKey` is over (the queue handed its key out): it is written. */
  | { kind: "retryDue"; cfgKey: string }
  /** The controller is stopping: the statuses of the units it drained are written before {@link StatusWriter.run} ends. */
  | { kind: "stopping" };

export class StatusWriter {
  /** When each status may be written; the callers say what happened (the methods below), not when to write. */
  readonly #schedule = new StatusSchedule();
  #wanted = false;
  #wake?: () => void;

  constructor(private readonly deps: StatusDeps) {}

  /** Something happened that a status may show (see {@link StatusFact}); a flush is asked for when one may be due. */
  heard(fact: StatusFact): void {
    const schedule = this.#schedule;
    switch (fact.kind) {
      case "queued":
        return schedule.queued(fact.cfgKeys, fact.namespace);
      case "finished":
        schedule.finished(fact.namespace, fact.stale);
        break;
      case "changed":
        schedule.markDirty(fact.cfgKey);
        break;
      case "compiled":
        schedule.markDirty(fact.cfgKey);
        if (!fact.valid) schedule.dropWork(fact.cfgKey);
        break;
      case "queueing":
        return schedule.queueing(fact.cfgKey, true);
      case "queuedAll":
        schedule.queueing(fact.cfgKey, false);
        break;
      case "retryDue":
        schedule.release(fact.cfgKey);
        break;
      case "stopping":
        break;
    }
    this.#kick();
  }

  /** The SyncConfig went: nothing of it is pending or dirty (the queue forgets its failed writes in a row). */
  forgetConfig(cfgKey: string): void {
    this.#schedule.forget(cfgKey);
  }

  /** Asks for a flush of the statuses that are ready (cheap; any number of calls become one flush). */
  #kick(): void {
    this.#wanted = true;
    this.#wake?.();
  }

  /** Namespaces still pending for `cfgKey` (for tests). */
  pendingOf(cfgKey: string): number {
    return this.#schedule.pendingOf(cfgKey);
  }

  /**
   * Writes statuses as their SyncConfigs' own work ends, one flush at a time, beside the workers: a status does not
   * wait behind other SyncConfigs' units in the queue. Stops once `signal` aborted and the last kick is served. Its
   * two waits (the next due status, the gathering of kicks) are therefore its own, not the work queue's timers: a
   * status handed out by the queue would wait for a free worker, behind a burst's units.
   */
  async run(signal: AbortSignal): Promise<void> {
    for (;;) {
      if (!this.#wanted) {
        // Woken by a kick, or when a status held back (by its SyncConfig's ongoing work, or by the gap after its last
        // write) is due.
        const dueMs = this.#schedule.untilNextDueMs();
        let timer: ReturnType<typeof setTimeout> | undefined;
        await new Promise<void>((resolve) => {
          this.#wake = resolve;
          if (dueMs !== undefined) timer = setTimeout(resolve, dueMs);
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
    const keys = this.#schedule.takeReady();
    const now = (this.deps.now?.() ?? new Date()).toISOString().replace(/\.\d+Z$/, "Z");
    for (const key of keys) {
      const sc = this.deps.syncConfigs.get(key);
      const entry = this.deps.compiled(key);
      if (!sc || !entry) continue;
      // Taken before its own work was done (held a minute): a progress report, unless that generation was synced.
      const settled = this.#schedule.workDone(key);
      const { next, errors, progress } = this.#statusOf(key, sc, entry, settled, now);
      // A progress report owes the settled status: written when the work ends, even if no count changes by then.
      if (progress) this.#schedule.markDirty(key);
      await this.deps.events.emit(key, sc, entry.result, errors);
      this.deps.metrics.observeStatus(key, next, entry.result.ok);
      if (!statusChanged(sc.status as SyncConfigStatus | undefined, next)) {
        this.deps.retries.forget(statusKey(key)); // it stands as it should: a later failure backs off from the start
        continue;
      }
      let written = await this.#patch(key, sc, next);
      if (written === "conflict") {
        // Someone else wrote the SyncConfig since it was cached (the watch lags): computed again from a copy read
        // now, once. The cache is left to the watch, whose events must still reach the handlers (a spec edit).
        const fresh = await this.#read(key);
        const same = fresh && fresh.metadata?.uid === sc.metadata?.uid &&
          fresh.metadata?.generation === sc.metadata?.generation;
        // A new spec (or a new SyncConfig under the name): its watch event recomputes the status.
        if (fresh && !same) continue;
        written = fresh
          ? await this.#patch(key, fresh, this.#statusOf(key, fresh, entry, settled, now).next)
          : "failed";
      }
      const decision = afterWork({ retry: written !== "written", baseMs: STATUS_RETRY_BASE_MS });
      if (decision.kind !== "backoff") this.deps.retries.forget(statusKey(key));
      else {
        // Held until the queue hands its key out again, after the back-off every retry has.
        this.#schedule.hold(key);
        this.deps.retries.addRateLimited(statusKey(key), PRIORITY.retry, decision, "retry");
      }
    }
  }

  /**
   * The status `sc` should have now: from the compile result and the SyncConfig's outcomes in every namespace. Its
   * conditions name the compiled generation; one whose namespaces are not all synced yet (`settled` false) gets a
   * progress report, so that its partial counts are never shown as that generation's Ready.
   */
  #statusOf(
    key: string,
    sc: SyncConfig,
    entry: { result: CompileResult; generation: number },
    settled: boolean,
    now: string,
  ) {
    const { result, generation } = entry;
    const current = sc.status as SyncConfigStatus | undefined;
    if (!result.ok) {
      return { next: invalidStatus(current, result.message, now, generation), errors: [] as string[], progress: false };
    }
    const total = this.deps.total(key);
    if (!settled && syncedGeneration(current) !== generation) {
      return { next: progressStatus(current, total, now, generation), errors: total.errors, progress: true };
    }
    return { next: syncedStatus(current, total, now, generation), errors: total.errors, progress: false };
  }

  /**
   * Writes `next` over `sc`. The whole conditions list is replaced, foreign conditions included (kept from
   * `sc.status`): the resourceVersion makes the patch fail with a conflict rather than drop a condition written
   * meanwhile. Only a reply on top of the cached copy goes into the cache (see {@link Reflector.upsert}).
   */
  async #patch(key: string, sc: SyncConfig, next: SyncConfigStatus): Promise<"written" | "conflict" | "failed"> {
    if (!statusChanged(sc.status as SyncConfigStatus | undefined, next)) return "written";
    const [namespace, name] = key.split("/");
    const body = { metadata: { resourceVersion: sc.metadata?.resourceVersion }, status: next };
    try {
      const updated = await patchSyncConfigStatus(this.deps.client, { namespace, name }, body, {
        urgent: true, // a status does not wait behind other SyncConfigs' queued writes
        contentType: "application/merge-patch+json",
      });
      if (this.deps.syncConfigs.get(key) === sc) this.deps.syncConfigs.upsert(updated);
      return "written";
    } catch (e) {
      if (isConflict(e)) return "conflict";
      log.warn("Could not write the status of SyncConfig {syncConfig}: {error}", { syncConfig: key, error: String(e) });
      return "failed";
    }
  }

  /** The SyncConfig as the API server has it now (one GET, after a conflict), or undefined. */
  async #read(key: string): Promise<SyncConfig | undefined> {
    try {
      const path = syncConfigPath(key);
      return decodeSyncConfig(await this.deps.client.request<unknown>({ method: "GET", path, urgent: true }));
    } catch (e) {
      log.warn("Could not read SyncConfig {syncConfig} after a conflict: {error}", {
        syncConfig: key,
        error: String(e),
      });
      return undefined;
    }
  }
}

const statusKey = (cfgKey: string) => workKey({ kind: "status", key: cfgKey });
