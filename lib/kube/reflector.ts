/**
 * An informer-style cache of one resource: the initial state (a WatchList, or paged lists where the server does not
 * serve one; see initial_state.ts), then watch from its resourceVersion with bookmarks, resume after a dropped
 * watch, start over after 410 Gone, back off with jitter after errors. It never stops on its own;
 * {@link Reflector.synced} resolves once the initial state is in the store.
 *
 * Handlers are told about changes only: after a relist, objects whose resourceVersion did not change are not
 * reported, so a relist causes no work downstream.
 */
import type { KubeClient, WatchEvent } from "./client.ts";
import { ApiError, isGone } from "./errors.ts";
import { asKubeObject, type KubeObject } from "./objects.ts";
import { HEALTHY_WATCH_MS, nextRound, type Round, sleep } from "./backoff.ts";
import {
  endsInitialEvents,
  InitialState,
  objectKey,
  refusesWatchList,
  sameObject,
  WATCH_LIST_QUERY,
  WatchListUnserved,
} from "./initial_state.ts";
import { listEach } from "./list.ts";
import { isAtLeast, isOlder } from "./resource_version.ts";
import { ObjectStore } from "./store.ts";
import { FillProgress } from "./fill_progress.ts";
import { IdleWatchdog } from "./idle_watchdog.ts";
import { decodingSafely } from "./safe_decode.ts";
import type { ChangeHandler, ChangeType, ReflectorOptions } from "./reflector_options.ts";

export { objectKey };

export type { ChangeHandler, ChangeType, ReflectorOptions };

const METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
const METADATA_WATCH = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";

export class Reflector<T> {
  readonly #store: ObjectStore<T>;
  #resourceVersion = "";
  /** Until the server shows that it does not serve WatchList (then paged lists, for the life of this reflector). */
  #watchList = true;
  /** Events (bookmarks included) the current watch delivered: a watch that delivered any was healthy. */
  #watchEvents = 0;
  /** Events delivered over the reflector's life (logs and gauges). */
  #received = 0;
  /** What a waiter for the first fill sleeps on: arrivals stamped, the fill's end told (no poll). */
  readonly #fill = new FillProgress();
  #stop?: AbortSignal;
  #synced = false;
  #resolveSynced!: () => void;
  /** Resolves once the initial list has been stored. */
  readonly synced: Promise<void> = new Promise((r) => (this.#resolveSynced = r));
  /**
   * The last list/watch error, cleared by a successful list or any watch event (bookmarks come about every minute);
   * lets callers report a cache that cannot fill, and tell a healthy watch from a failing one.
   */
  lastError: unknown;

  private readonly opts: ReflectorOptions<T>;

  constructor(private readonly client: KubeClient, opts: ReflectorOptions<T>) {
    this.opts = { ...opts, decode: decodingSafely(opts.decode, opts.path) };
    this.#store = new ObjectStore(opts.packing);
  }

  get hasSynced(): boolean {
    return this.#synced;
  }

  get size(): number {
    return this.#store.size;
  }

  /** How many objects and events (bookmarks included) its lists and watches delivered so far; grows while it fills. */
  get received(): number {
    return this.#received;
  }

  /** Resolves once the first fill settles or nothing arrived for `stallMs` (lib/kube/fill_progress.ts). */
  settledOrStalled(stallMs: number): Promise<void> {
    return this.#fill.settledOrStalled(stallMs);
  }

  /** Whether the reflector was stopped: it will never fill (a waiter must not wait for it). */
  get stopped(): boolean {
    return this.#stop?.aborted === true;
  }

  get(key: string): T | undefined {
    return this.#store.get(key);
  }

  /** `value`, got at `key` earlier, settled after an await (see ObjectStore.settled). */
  settled(key: string, value: T | undefined): void {
    this.#store.settled(key, value);
  }

  values(): IterableIterator<T> {
    return (function* (s) {
      for (const [, e] of s.entries()) yield s.valueOf(e);
    })(this.#store);
  }

  /** [`namespace/name`, value] of every object. */
  entries(): IterableIterator<[string, T]> {
    return (function* (m) {
      for (const [k, e] of m.entries()) yield [k, m.valueOf(e)] as [string, T];
    })(this.#store);
  }

  /** Our own write's reply, stored at once: the next sync must not act on the stale copy before the watch catches up. */
  upsert(reply: object): void {
    const raw = asKubeObject(reply);
    if (!raw) return;
    const store = this.#store;
    const key = objectKey(raw), old = store.entry(key);
    const rv = raw.metadata?.resourceVersion ?? "";
    // The watch may already have delivered a later change by someone else (an edit, or a delete and a new object
    // of the same name): that copy is the truth. resourceVersions of one resource are ordered across objects.
    if (old && isOlder(rv, store.versionOf(old))) return;
    // Not in the store although the watch has passed this version: it was deleted (or lost our label) since.
    if (!old && isAtLeast(this.#resourceVersion, rv)) return;
    const value = this.opts.decode(raw, sameObject(store, old, raw), true);
    if (value !== undefined) store.set(key, value, rv, raw.metadata?.uid);
  }

  /** Forgets an object we deleted, until the watch confirms it. */
  forget(key: string): void {
    this.#store.delete(key);
  }

  /**
   * Runs until `signal` aborts. Failures back off exponentially with jitter (0.8 s doubling to 30 s, as client-go's
   * reflector does); only a healthy watch (one that delivered an event or stayed open for a while) resets it, so an
   * API server outage costs a request every 30 s per resource, not several a second. A watch that ends in 410 Gone
   * relists at once after a healthy watch, and backs off like any failure after one that was not (a server that
   * answers every watch with 410 must not cost a full list a second).
   */
  async run(signal: AbortSignal): Promise<void> {
    this.#stop = signal;
    signal.addEventListener("abort", () => this.#fill.settled(), { once: true });
    let failures = 0;
    while (!signal.aborted) {
      let watchStarted = 0;
      this.#watchEvents = 0;
      const healthy = () =>
        watchStarted > 0 && (this.#watchEvents > 0 || performance.now() - watchStarted >= HEALTHY_WATCH_MS);
      let round: Round;
      let error: unknown;
      const watchList = !this.#resourceVersion && this.#watchList;
      try {
        if (!this.#resourceVersion && !watchList) {
          await this.#list(signal);
          this.lastError = undefined;
        }
        watchStarted = performance.now();
        await this.#watch(signal);
        this.lastError = undefined;
        round = { healthy: healthy(), ended: "closed" };
      } catch (e) {
        if (signal.aborted) return;
        if (watchList && refusesWatchList(e)) {
          this.#watchList = false; // once: the next round lists
          this.opts.onWatchRestart?.(`the server does not serve WatchList (${errorText(e)}), listing instead`);
          continue;
        }
        if (isGone(e)) {
          this.#resourceVersion = ""; // too old: relist, then resume watching
          this.opts.onWatchRestart?.("resourceVersion expired (410 Gone), relisting");
          round = { healthy: healthy(), ended: "gone" };
        } else {
          this.lastError = error = e;
          this.#fill.settled();
          const retryAfterMs = e instanceof ApiError && e.retryAfterSeconds ? e.retryAfterSeconds * 1000 : 0;
          round = { healthy: healthy(), ended: "failed", retryAfterMs };
        }
      }
      const next = nextRound(failures, round);
      failures = next.failures;
      if (round.ended === "failed") this.opts.onError?.(error, next.waitMs);
      if (next.waitMs > 0) await sleep(next.waitMs, signal);
    }
  }

  async #list(signal: AbortSignal): Promise<void> {
    const state = new InitialState(this.#store, this.opts.decode);
    const rv = await listEach(
      this.client,
      {
        path: this.opts.path,
        query: { labelSelector: this.opts.labelSelector },
        accept: this.opts.metadataOnly ? METADATA_LIST : undefined,
        signal,
      },
      this.opts.pageSize ?? 100,
      (raw) => {
        this.#received++;
        this.#fill.arrived();
        state.add(raw);
      },
    );
    this.#filled(state, rv);
  }

  /** The initial state is complete at `rv`: it replaces the store. */
  #filled(state: InitialState<T>, rv: string): void {
    state.commit(this.opts.onChange);
    this.#resourceVersion = rv;
    if (!this.#synced) {
      this.#synced = true;
      this.#resolveSynced();
      this.#fill.settled();
    }
  }

  /**
   * Watches until the server ends the stream, counting events in {@link Reflector.#watchEvents}. Without a
   * resourceVersion it is a WatchList: its initial events fill the store first.
   */
  async #watch(signal: AbortSignal): Promise<void> {
    // The server ends a watch after timeoutSeconds; a random length spreads reconnects like client-go does.
    const timeoutSeconds = 300 + Math.floor(Math.random() * 300);
    // A watch that stays silent much longer than the server's bookmarks come is abandoned and resumed.
    const idleMs = this.opts.idleTimeoutMs ?? 150_000;
    const idle = new IdleWatchdog(idleMs);
    try {
      let initial = this.#resourceVersion ? undefined : new InitialState(this.#store, this.opts.decode);
      const query = initial ? { labelSelector: this.opts.labelSelector, ...WATCH_LIST_QUERY, timeoutSeconds } : {
        labelSelector: this.opts.labelSelector,
        resourceVersion: this.#resourceVersion,
        allowWatchBookmarks: true,
        timeoutSeconds,
      };
      const events = this.client.watch(
        this.opts.path,
        query,
        AbortSignal.any([signal, idle.signal]),
        this.opts.metadataOnly ? METADATA_WATCH : undefined,
      );
      for await (const ev of events) {
        idle.arrived();
        this.#watchEvents++;
        this.#received++;
        this.#fill.arrived();
        this.lastError = undefined; // bookmarks included: the watch is alive
        if (!initial || ev.type === "ERROR") this.#apply(ev);
        else if (endsInitialEvents(ev)) {
          this.#filled(initial, (ev.object as KubeObject).metadata?.resourceVersion ?? "");
          initial = undefined;
        } else if (ev.type === "BOOKMARK") {
          throw new WatchListUnserved("a bookmark came before the initial events ended");
        } else if (ev.type === "DELETED") initial.remove(ev.object as KubeObject);
        else initial.add(ev.object as KubeObject);
      }
      if (initial) throw new WatchListUnserved("the watch ended before its initial events did");
    } catch (e) {
      if (!idle.signal.aborted || signal.aborted) throw e;
      this.opts.onWatchRestart?.(`no event or bookmark for ${idleMs / 1000}s, reconnecting`);
    } finally {
      idle.stop();
    }
  }

  #apply(ev: WatchEvent): void {
    if (ev.type === "ERROR") {
      const status = ev.object as { code?: number; reason?: string; message?: string };
      throw new ApiError(status.code ?? 500, status.reason ?? "Unknown", status.message ?? "watch error");
    }
    const raw = ev.object as KubeObject;
    const rv = raw.metadata?.resourceVersion ?? "";
    if (rv) this.#resourceVersion = rv;
    if (ev.type === "BOOKMARK") return;
    const key = objectKey(raw);
    const store = this.#store;
    const old = store.entry(key);
    const oldUid = old && store.uidOf(old);
    if (ev.type === "DELETED") {
      // After delete + create (forceRecreate) the old object's DELETED can arrive after we stored the new one.
      if (oldUid && raw.metadata?.uid && oldUid !== raw.metadata.uid) return;
      store.delete(key);
      if (old && this.opts.onChange) this.opts.onChange("deleted", store.valueOf(old), store.valueOf(old), key);
      return;
    }
    // An event older than the copy our own write stored (resourceVersions are integers in every API server that
    // exists, but only compared when both parse as such).
    if (old && oldUid === raw.metadata?.uid && isOlder(rv, store.versionOf(old))) return;
    // Already known at this version: the reply of our own write, put in by upsert(). Keep that copy (the caller may
    // have reduced it since) and report nothing.
    if (old && oldUid === raw.metadata?.uid && store.versionOf(old) === rv) return;
    const value = this.opts.decode(raw, sameObject(store, old, raw));
    if (value === undefined) return;
    store.set(key, value, rv, raw.metadata?.uid);
    this.opts.onChange?.(old ? "modified" : "added", value, old && store.valueOf(old), key);
  }
}

const errorText = (e: unknown) => (e instanceof Error ? e.message : String(e));
