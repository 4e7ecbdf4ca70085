/**
 * Which SyncConfig items name which objects, by API group and kind: the authority that markers on objects are not.
 * An object is worth its content in a cache, and an owner annotation holds it, only when an item names it; the
 * caches of a kind no item names can stop. Rebuilt from the valid compiled SyncConfigs whenever one changes.
 */
import { splitApiVersion } from "../kube/objects.ts";
import type { CompiledSyncConfig } from "./syncconfig.ts";
import { renderTemplate } from "./template.ts";

const kindKey = (group: string, kind: string) => `${group}/${kind}`;

export class ItemIndex {
  /** group/kind -> the SyncConfigs with a syncItem of it and that item's (templated) name. */
  #syncItems = new Map<string, { cfgKey: string; name: string }[]>();
  #deleteKinds = new Set<string>();

  rebuild(configs: Iterable<CompiledSyncConfig>): void {
    const sync = new Map<string, { cfgKey: string; name: string }[]>();
    const deletes = new Set<string>();
    for (const cfg of configs) {
      for (const item of cfg.syncItems) {
        if (item.problem) continue;
        const key = kindKey(splitApiVersion(item.apiVersion).group, item.kind);
        let list = sync.get(key);
        if (!list) sync.set(key, list = []);
        list.push({ cfgKey: cfg.key, name: item.name });
      }
      for (const item of cfg.deleteItems) {
        if (!item.problem) deletes.add(kindKey(splitApiVersion(item.apiVersion).group, item.kind));
      }
    }
    this.#syncItems = sync;
    this.#deleteKinds = deletes;
  }

  /** Keys of the SyncConfigs with a syncItem that renders to `name` of this kind in `namespace` (selection aside). */
  naming(group: string, kind: string, namespace: string, name: string): string[] {
    const out: string[] = [];
    for (const item of this.#syncItems.get(kindKey(group, kind)) ?? []) {
      if (renderTemplate(item.name, namespace) === name && !out.includes(item.cfgKey)) out.push(item.cfgKey);
    }
    return out;
  }

  hasSyncKind(group: string, kind: string): boolean {
    return this.#syncItems.has(kindKey(group, kind));
  }

  hasDeleteKind(group: string, kind: string): boolean {
    return this.#deleteKinds.has(kindKey(group, kind));
  }
}
