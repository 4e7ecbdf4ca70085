/**
 * How a reflector reads the state it starts from (and starts over from after 410 Gone), one object at a time so that
 * what is held is the decoded store, never a list: preferably a WatchList (a watch with `sendInitialEvents=true`,
 * whose initial objects arrive as ADDED events and end with a bookmark annotated `k8s.io/initial-events-end`, after
 * which the same stream goes on as the watch), else paged lists read item by item (lib/kube/list.ts).
 *
 * Either way only changes are reported against what the store held: an object at the same uid and resourceVersion
 * keeps what was learnt of it, one no longer there is reported deleted.
 */
import type { WatchEvent } from "./client.ts";
import { ApiError } from "./errors.ts";
import type { KubeObject } from "./objects.ts";
import type { ChangeHandler } from "./reflector_options.ts";
import type { Entry, ObjectStore } from "./store.ts";

export const objectKey = (o: KubeObject): string =>
  o.metadata?.namespace ? `${o.metadata.namespace}/${o.metadata.name}` : `${o.metadata?.name}`;

/** The cached value of the object `raw` is a version of (same uid), if any. */
export const sameObject = <T>(store: ObjectStore<T>, cached: Entry | undefined, raw: KubeObject): T | undefined =>
  cached && store.uidOf(cached) === raw.metadata?.uid ? store.valueOf(cached) : undefined;

/** The objects of one initial list or WatchList, decoded as they arrive, until they replace the store. */
export class InitialState<T> {
  /** Kept as the store keeps them (packed, grouped): after a restart this holds every object until the list ends. */
  #seen: ObjectStore<T>;

  constructor(
    private readonly store: ObjectStore<T>,
    private readonly decode: (raw: KubeObject, previous: T | undefined, reply: false, initial: true) => T | undefined,
  ) {
    this.#seen = store.emptyLike();
  }

  add(raw: KubeObject): void {
    const key = objectKey(raw);
    const { store } = this;
    const old = store.entry(key);
    // Unchanged since the store had it: keep what was learnt about it (a verdict instead of content).
    if (old && store.uidOf(old) === raw.metadata?.uid && store.versionOf(old) === raw.metadata?.resourceVersion) {
      this.#seen.put(key, old);
      return;
    }
    const value = this.decode(raw, sameObject(store, old, raw), false, true);
    if (value === undefined) this.#seen.delete(key);
    else this.#seen.put(key, store.make(value, raw.metadata?.resourceVersion ?? "", raw.metadata?.uid));
  }

  remove(raw: KubeObject): void {
    this.#seen.delete(objectKey(raw));
  }

  /** Replaces the store with what arrived, telling `onChange` only what really changed. */
  commit(onChange: ChangeHandler<T> | undefined): void {
    const { store } = this;
    const seen = this.#seen;
    this.#seen = store.emptyLike();
    if (store.size === 0) {
      // The first list (or one after the store emptied): taken over as it is, never held twice.
      store.takeOver(seen);
      if (onChange) {
        for (const [key, next] of store.entries()) onChange("added", store.valueOf(next), undefined, key);
      }
      return;
    }
    for (const [key, old] of store.entries()) {
      if (seen.entry(key) === undefined) {
        store.delete(key);
        if (onChange) onChange("deleted", store.valueOf(old), store.valueOf(old), key);
      }
    }
    for (const [key, next] of seen.entries()) {
      const old = store.entry(key);
      const oldVersion = old && store.versionOf(old);
      const oldValue = old && onChange && store.valueOf(old);
      store.put(key, next);
      if (!onChange) continue;
      if (!old) onChange("added", store.valueOf(next), undefined, key);
      else if (oldVersion !== store.versionOf(next)) onChange("modified", store.valueOf(next), oldValue, key);
    }
  }
}

/** The query of a WatchList (resourceVersion unset: the state now). */
export const WATCH_LIST_QUERY = {
  sendInitialEvents: true,
  resourceVersionMatch: "NotOlderThan",
  allowWatchBookmarks: true,
} as const;

/** The bookmark after the initial events of a WatchList: its resourceVersion is the state's. */
export function endsInitialEvents(ev: WatchEvent): boolean {
  const annotations = (ev.object as KubeObject).metadata?.annotations;
  return ev.type === "BOOKMARK" && annotations?.["k8s.io/initial-events-end"] === "true";
}

/**
 * The server does not serve WatchList: it refused the parameters (a server before Kubernetes 1.27, or one with the
 * feature off, answers 400 or 422), or ignored them (a bookmark, or the end of the stream, before the end bookmark).
 */
export class WatchListUnserved extends Error {}

/** Whether an error of a WatchList request says that the server does not serve WatchList. */
export function refusesWatchList(e: unknown): boolean {
  return e instanceof WatchListUnserved ||
    (e instanceof ApiError && [400, 405, 406, 415, 422, 501].includes(e.code));
}
