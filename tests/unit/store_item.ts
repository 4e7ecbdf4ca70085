/** A value for the store's tests (lib/kube/store.ts): packed as its note, unless busy. */
import type { Packing } from "../../lib/kube/store.ts";

export interface Item {
  resourceVersion: string;
  uid: string;
  note?: string;
  /** While set, the value may still change: not packed. */
  busy?: true;
}

export const itemPacking: Packing<Item> = {
  pack: (v) => (v.busy ? undefined : v.note ?? ""),
  unpack: (packed, resourceVersion, uid) => ({ resourceVersion, uid, ...(packed ? { note: packed } : {}) }),
};
