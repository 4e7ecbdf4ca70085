/**
 * The markers espejo writes, in one place: on the objects it writes (a label its caches select by, owner, hash and
 * creation annotations, its field manager) and on SyncConfigs (the prune annotation and finalizer). They make
 * decisions cheap; none of them is authority (anyone who can edit an object can write them; see
 * docs/threat-model.md): markers are hints, content is compared by value, and an owner holds an object only for a
 * SyncConfig with an item for it.
 */

/** The label on every object espejo writes: its caches watch only objects that carry it. */
export const MANAGED_LABEL = "sync.appuio.ch/managed-by";
export const MANAGED_LABEL_VALUE = "espejo";
/** The SyncConfig (`namespace/name`) that wrote an object; another SyncConfig must not take it over. */
export const OWNER_ANNOTATION = "sync.appuio.ch/owner";
/** The hash of the desired object as last written: a different value means "write"; an equal one proves nothing. */
export const HASH_ANNOTATION = "sync.appuio.ch/desired-hash";
/**
 * Written on every object espejo creates (never on one it adopts), with the SyncConfig's key, and kept by its
 * updates: what pruning may delete (lib/sync/prune_decisions.ts). Not part of the desired object, so never a difference: a
 * tenant who removes it only takes the object out of pruning.
 */
export const CREATED_ANNOTATION = "sync.appuio.ch/created-by";
/** The field manager of espejo's writes. */
export const FIELD_MANAGER = "espejo";
/** On a SyncConfig: pruning on ("true") or off ("false"), else `--prune-default`. */
export const PRUNE_ANNOTATION = "sync.appuio.ch/prune";
/** Held on a SyncConfig while pruning is on, so that its deletion is cleaned up even while espejo is not running. */
export const PRUNE_FINALIZER = "sync.appuio.ch/prune";
