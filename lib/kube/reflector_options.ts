/**
 * What a reflector (lib/kube/reflector.ts) is given and what it tells: its options and the change handler. Apart from
 * the class so that what reads an initial state (initial_state.ts) can name the handler without importing the
 * reflector that uses it.
 */
import type { KubeObject } from "./objects.ts";
import type { Packing } from "./store.ts";

export type ChangeType = "added" | "modified" | "deleted";
/** `key` is `namespace/name` (or `name` for cluster-scoped objects). */
export type ChangeHandler<T> = (type: ChangeType, obj: T, old: T | undefined, key: string) => void;

export interface ReflectorOptions<T> {
  /** Collection path, e.g. `/api/v1/namespaces` or `/apis/rbac.authorization.k8s.io/v1/roles`. */
  path: string;
  labelSelector?: string;
  /** Ask for PartialObjectMetadata only (names and labels, no content). */
  metadataOnly?: boolean;
  /**
   * Turns a raw object into what is cached (drop what is not needed); undefined skips the object. `previous` is the
   * cached value of the same object (same uid), if any, so that what was learnt about it can carry over. `reply`
   * is set for an object given to {@link Reflector.upsert} (one the caller holds and deals with at once), unset for
   * one that came from a list or watch; `initial` for one of an initial state (the first list, a relist after 410
   * Gone), where every object arrives at once, unset for a watch event after it.
   */
  decode: (raw: KubeObject, previous: T | undefined, reply?: boolean, initial?: boolean) => T | undefined;
  onChange?: ChangeHandler<T>;
  /** Told about list/watch failures and restarts (for logs and metrics). */
  onError?: (error: unknown, willRetryInMs: number) => void;
  onWatchRestart?: (reason: string) => void;
  /** Objects a page when the server serves no WatchList. Default 100 (each page is read item by item anyway). */
  pageSize?: number;
  /** A watch with no event (bookmarks included) for this long is restarted. Default 150 s. */
  idleTimeoutMs?: number;
  /** How a value that has settled is kept as one string (see store.ts); without it values are kept as they are. */
  packing?: Packing<T>;
}
