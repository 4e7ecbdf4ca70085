/**
 * A settled {@link CachedObject} as one string, for the cache's store (lib/kube/store.ts): at 100,000 cached objects
 * the object with its five strings (uid, version, hashes) costs about 400 bytes, the string a third of that.
 *
 * Settled means that nothing in the entry changes any more: its content was dropped (it was judged, or no item names
 * it) and it carries no out-of-sync record and no ownerReferences. An entry with a value the string cannot hold (a
 * newline in a tenant's hash annotation) stays an object.
 */
import type { Packing } from "../kube/store.ts";
import { type CachedObject, markers } from "./cached_object.ts";

const SEP = "\n";
const IN_SYNC = 1;
const CONTENTLESS = 2;
const LARGE = 4;
const HAS_HASH = 8;
const HAS_BASELINE = 16;
/** The baseline's desired hash is the entry's own (the usual case): written once. */
const BASELINE_FOR_OWN_HASH = 32;

/**
 * A marker as its number in the intern table ("" for none), or else as itself after `=` (JSON after `~` when it
 * holds a newline): a value that is not espejo's own (bounded by cached_object.ts) costs its length, no more.
 */
function markerRef(v: string | undefined): string {
  if (v === undefined) return "";
  const i = markers.indexOf(v);
  if (i !== undefined) return i.toString(36);
  return v.includes(SEP) ? `~${JSON.stringify(v)}` : `=${v}`;
}

function markerAt(ref: string): string | undefined {
  if (ref === "") return undefined;
  if (ref[0] === "=") return ref.slice(1);
  if (ref[0] === "~") return JSON.parse(ref.slice(1));
  return markers.at(parseInt(ref, 36));
}

export const packedObjects: Packing<CachedObject> = {
  pack(o: CachedObject): string | undefined {
    if (o.json !== undefined || o.outOfSync !== undefined || o.ownerReferences !== undefined) return undefined;
    const owner = markerRef(o.owner);
    const createdBy = markerRef(o.createdBy);
    const manager = markerRef(o.manager);
    const hash = o.desiredHash ?? "";
    const base = o.baseline;
    const baseFor = base && base.desiredHash !== o.desiredHash ? base.desiredHash : "";
    if (hash.includes(SEP) || baseFor.includes(SEP) || base?.content.includes(SEP)) return undefined;
    const flags = (o.inSync ? IN_SYNC : 0) | (o.contentless ? CONTENTLESS : 0) | (o.large ? LARGE : 0) |
      (o.desiredHash !== undefined ? HAS_HASH : 0) | (base ? HAS_BASELINE : 0) |
      (base && base.desiredHash === o.desiredHash ? BASELINE_FOR_OWN_HASH : 0);
    return [flags.toString(36), hash, owner, createdBy, manager, baseFor, base?.content ?? ""].join(SEP);
  },

  unpack(packed: string, resourceVersion: string, uid: string): CachedObject {
    const [f, hash, owner, createdBy, manager, baseFor, content] = packed.split(SEP);
    const flags = parseInt(f, 36);
    const o: CachedObject = {
      resourceVersion,
      uid,
      desiredHash: flags & HAS_HASH ? hash : undefined,
      owner: markerAt(owner),
      createdBy: markerAt(createdBy),
      manager: markerAt(manager),
    };
    if (flags & HAS_BASELINE) {
      o.baseline = { desiredHash: flags & BASELINE_FOR_OWN_HASH ? o.desiredHash! : baseFor, content };
    }
    if (flags & CONTENTLESS) o.contentless = true;
    if (flags & LARGE) o.large = true;
    if (flags & IN_SYNC) o.inSync = true;
    return o;
  },
};
