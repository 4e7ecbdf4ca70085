/**
 * Namespaces whose labels were trimmed to the keys SyncConfigs read (lib/model/namespace_info.ts) before a SyncConfig
 * that reads another key was compiled: their selection is unknown (Registry.labelsKnown), so nothing is written,
 * pruned or uncounted there, until each is read again (one GET) with the keys of now. Only namespaces with more than
 * MAX_KEPT_LABELS of labels are ever trimmed, so this costs one GET per such namespace when a SyncConfig brings a new
 * key (and after a restart, whose namespaces may be listed before any SyncConfig is compiled).
 *
 * Two ways in: a SyncConfig's work item asks for every stale namespace before it queues what it selects
 * ({@link refresh}), and a unit that finds its namespace stale asks for that one ({@link readSoon}): a copy that went
 * stale again (a relist that kept it at the same version) or whose read failed is healed by the next unit of it (an
 * interval pass queues it). Each namespace read is queued once its labels are known. A failed read is logged and
 * never fails the SyncConfig's work: its other namespaces are known.
 *
 * Reads are made in sweeps, one namespace after the other, and a sweep starts at most once every
 * {@link SWEEP_GAP_MS}. In delegated mode a team writes its own selector, and each edit that brings a key no selector
 * read makes every trimmed namespace stale: without the gap, a team editing in a loop would have espejo read every
 * trimmed namespace (up to 1 MiB of labels each) once per edit, and each read's unit, finding its namespace stale again,
 * read it once more. With it, such a loop costs at most one read of each trimmed namespace per gap, however fast it
 * edits. An ask within the gap does not wait: it is served at the gap's end (the SyncConfig's status then counts the
 * namespace a little later). The first ask after a quiet gap — a new SyncConfig, a restart — is served at once.
 */
import { type Later, unrefLater } from "./later.ts";
import { getLogger } from "@logtape/logtape";
import type { KubeClient } from "../kube/client.ts";
import { isNotFound } from "../kube/errors.ts";
import type { Reflector } from "../kube/reflector.ts";
import type { NamespaceInfo } from "../model/namespace_info.ts";
import type { Registry } from "../model/registry.ts";

const log = getLogger(["espejo", "controller"]);

/** The least time between the starts of two sweeps over the stale namespaces. */
export const SWEEP_GAP_MS = 10_000;

export interface TrimmedLabelsOptions {
  gapMs?: number;
  now?: () => number;
  later?: Later;
  /** The controller's run: a sweep scheduled when it ends does not run. */
  signal?: AbortSignal;
}

export class TrimmedLabels {
  /** Namespaces found stale by an ask that the next sweep serves. */
  readonly #asked = new Set<string>();
  readonly #gapMs: number;
  readonly #now: () => number;
  readonly #later: Later;
  readonly #signal: AbortSignal | undefined;
  #startedAt = -Infinity;
  #sweeping = false;
  /** Cancels the scheduled sweep; set while one is scheduled. */
  #cancel?: () => void;

  constructor(
    private readonly client: KubeClient,
    private readonly namespaces: Pick<Reflector<NamespaceInfo>, "values" | "upsert" | "get">,
    private readonly registry: Pick<Registry<NamespaceInfo>, "labelsKnown">,
    /** A namespace read again: it is queued (its selection is known now). */
    private readonly reread: (name: string) => void,
    opts: TrimmedLabelsOptions = {},
  ) {
    this.#gapMs = opts.gapMs ?? SWEEP_GAP_MS;
    this.#now = opts.now ?? (() => performance.now());
    this.#later = opts.later ?? unrefLater;
    this.#signal = opts.signal;
    this.#signal?.addEventListener("abort", () => this.#cancel?.(), { once: true });
  }

  /**
   * Reads every namespace whose labels are not known again, one after the other: now (resolving when done) if no
   * sweep started within {@link SWEEP_GAP_MS}, else at the gap's end (resolving at once).
   */
  refresh(): Promise<void> {
    for (const ns of this.namespaces.values()) if (!this.registry.labelsKnown(ns)) this.#asked.add(ns.name);
    return this.#sweepOrSchedule();
  }

  /**
   * Reads namespace `name` again, as part of a sweep: now (resolving when done) if no sweep started within
   * {@link SWEEP_GAP_MS}, else at the gap's end (resolving at once). A unit that finds its namespace stale asks this;
   * the read queues the namespace, whose unit may find it stale again if a key came meanwhile: the gap keeps that
   * from becoming a loop of reads while a team keeps editing.
   */
  readSoon(name: string): Promise<void> {
    this.#asked.add(name);
    return this.#sweepOrSchedule();
  }

  /** Whether a sweep is scheduled (for tests). */
  get scheduled(): boolean {
    return this.#cancel !== undefined;
  }

  #sweepOrSchedule(): Promise<void> {
    if (!this.#asked.size) return Promise.resolve();
    if (this.#sweeping || this.#cancel || this.#now() - this.#startedAt < this.#gapMs) {
      this.#schedule();
      return Promise.resolve();
    }
    return this.#sweep();
  }

  async #sweep(): Promise<void> {
    this.#startedAt = this.#now();
    this.#sweeping = true;
    const names = [...this.#asked];
    this.#asked.clear();
    try {
      for (const name of names) {
        const ns = this.namespaces.get(name);
        if (!ns) continue; // gone
        // Known again without a read (the keys it lacked went, or its watch brought it read anew): queued all the
        // same, as a SyncConfig's work item that asked may have left it out.
        if (this.registry.labelsKnown(ns)) this.reread(name);
        else await this.#read(name);
      }
    } finally {
      this.#sweeping = false;
    }
    if (this.#asked.size) this.#schedule(); // asked for while it ran
  }

  /** Schedules a sweep for the end of the gap (or at once, if it is over) unless one is scheduled or under way. */
  #schedule(): void {
    if (this.#cancel || this.#sweeping || this.#signal?.aborted) return;
    const wait = Math.max(0, this.#startedAt + this.#gapMs - this.#now());
    this.#cancel = this.#later(() => {
      this.#cancel = undefined;
      void this.#sweep();
    }, wait);
  }

  async #read(name: string): Promise<void> {
    try {
      this.namespaces.upsert(
        await this.client.request<object>({ method: "GET", path: `/api/v1/namespaces/${encodeURIComponent(name)}` }),
      );
      const ns = this.namespaces.get(name);
      if (ns && this.registry.labelsKnown(ns)) this.reread(name);
    } catch (e) {
      if (isNotFound(e)) return; // its watch event removes it
      log.warn(
        "Cannot read namespace {namespace} again for the label keys SyncConfigs read, so it is not synced until a " +
          "later unit of it reads it: {error}",
        { namespace: name, error: e instanceof Error ? e.message : String(e) },
      );
    }
  }
}
