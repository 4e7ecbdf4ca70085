/**
 * A settled {@link CachedObject} as one string, for the cache's store (lib/kube/store.ts): at 100,000 cached objects
 * the object with its five strings (uid, version, hashes) costs about 400 bytes, the string a third of that.
 *
 * Settled means that its content was dropped (it was judged, or no item names it); its ownerReferences, bounded
 * (cached_object.ts), are kept as their JSON text.
 * An out-of-sync record is packed too: after a restart every object whose only differences are fields the server
 * adds (a NetworkPolicy's policyTypes) holds one until its unit decides it, 30,000 of them at 5,000 namespaces. A
 * unit that decides it puts the entry back (ObjectStore.settled). An entry with a value the string cannot hold (a
 * newline in a tenant's hash annotation, or in a field name its record names) stays an object.
 */
import type { Packing } from "../kube/store.ts";
import { type CachedObject, markers } from "./cached_object.ts";
import { NOT_SET_BY_ITEM } from "./verdict.ts";

const SEP = "\n";
const IN_SYNC = 1;
const CONTENTLESS = 2;
const LARGE = 4;
const HAS_HASH = 8;
const HAS_BASELINE = 16;
/** The baseline's desired hash is the entry's own (the usual case): written once. */
const BASELINE_FOR_OWN_HASH = 32;
const OUT_OF_SYNC = 64;
/** The record's desired hash is the entry's own (always, unless a tenant edited the annotation since). */
const RECORD_FOR_OWN_HASH = 128;
const RECORD_RESTORE = 256;
const RECORD_EXTRAS = 512;
/** The record's reason is a path followed by {@link NOT_SET_BY_ITEM}, which is left out. */
const RECORD_NOT_SET = 1024;
/** The entry's ownerReferences (JSON, which has no newline) are the last field. */
const HAS_REFERENCES = 2048;
const REFERENCES_UNKEPT = 4096;

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
    if (o.json !== undefined) return undefined;
    const owner = markerRef(o.owner);
    const createdBy = markerRef(o.createdBy);
    const manager = markerRef(o.manager);
    const hash = o.desiredHash ?? "";
    const base = o.baseline;
    const baseFor = base && base.desiredHash !== o.desiredHash ? base.desiredHash : "";
    const rec = o.outOfSync;
    const recFor = rec && rec.desiredHash !== o.desiredHash ? rec.desiredHash : "";
    const notSet = rec?.reason.endsWith(NOT_SET_BY_ITEM) === true;
    const reason = rec ? (notSet ? rec.reason.slice(0, -NOT_SET_BY_ITEM.length) : rec.reason) : "";
    const fields = [hash, baseFor, base?.content ?? "", recFor, reason, rec?.extras ?? ""];
    if (o.ownerReferences !== undefined) fields.push(o.ownerReferences);
    if (fields.some((f) => f.includes(SEP))) return undefined;
    const flags = (o.inSync ? IN_SYNC : 0) | (o.contentless ? CONTENTLESS : 0) | (o.large ? LARGE : 0) |
      (o.desiredHash !== undefined ? HAS_HASH : 0) | (base ? HAS_BASELINE : 0) |
      (base && base.desiredHash === o.desiredHash ? BASELINE_FOR_OWN_HASH : 0) |
      (rec ? OUT_OF_SYNC : 0) | (rec && rec.desiredHash === o.desiredHash ? RECORD_FOR_OWN_HASH : 0) |
      (rec?.restore ? RECORD_RESTORE : 0) | (rec?.extras !== undefined ? RECORD_EXTRAS : 0) |
      (notSet ? RECORD_NOT_SET : 0) | (o.ownerReferences !== undefined ? HAS_REFERENCES : 0) |
      (o.referencesUnkept ? REFERENCES_UNKEPT : 0);
    const head = [flags.toString(36), hash, owner, createdBy, manager, baseFor, base?.content ?? ""];
    // Entries in sync (nearly all) end after the baseline.
    const packed = rec ? [...head, recFor, reason, rec.extras ?? ""] : head;
    if (o.ownerReferences !== undefined) packed.push(o.ownerReferences);
    return packed.join(SEP);
  },

  unpack(packed: string, resourceVersion: string, uid: string): CachedObject {
    const parts = packed.split(SEP);
    const [f, hash, owner, createdBy, manager, baseFor, content, recFor, reason, extras] = parts;
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
    if (flags & HAS_REFERENCES) o.ownerReferences = parts[parts.length - 1];
    if (flags & REFERENCES_UNKEPT) o.referencesUnkept = true;
    if (flags & OUT_OF_SYNC) {
      o.outOfSync = {
        desiredHash: flags & RECORD_FOR_OWN_HASH ? o.desiredHash! : recFor,
        reason: flags & RECORD_NOT_SET ? reason + NOT_SET_BY_ITEM : reason,
        restore: (flags & RECORD_RESTORE) !== 0,
      };
      if (flags & RECORD_EXTRAS) o.outOfSync.extras = extras;
    }
    return o;
  },
};
