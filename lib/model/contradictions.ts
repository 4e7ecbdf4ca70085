/**
 * Items that contradict each other in one namespace: a deleteItem that names an object a syncItem syncs there (same
 * API group, kind and rendered name), of two SyncConfigs that both select the namespace or of one. Performed as
 * written, one would delete what the other creates again on every sync, and each would see the other's writes as a
 * fight. Decided once per unit, before anything is written: neither item is performed, and each fails with a message
 * naming the other, as two syncItems naming one object do (lib/model/syncconfig.ts, `markShadowed`).
 *
 * Except that a SyncConfig that writes as a ServiceAccount (a team's, lib/model/identity.ts) yields to one that
 * writes as espejo (the platform's): its item fails, and the other's is performed. Otherwise a team could switch the
 * platform's item off in its namespaces with a deleteItem naming the same object.
 *
 * Pure: the SyncConfigs that select the namespace in, the contested items out.
 */
import { splitApiVersion } from "../kube/objects.ts";
import type { CompiledSyncConfig } from "./syncconfig.ts";
import { renderTemplate } from "./template.ts";

/** A contested item: the object it names in the namespace, and why it is not performed. */
export interface Contest {
  kind: string;
  /** The object's name, rendered in the namespace. */
  name: string;
  problem: string;
}

/** By SyncConfig key, then by item field (`.spec.deleteItems[0]`). */
export type Contradictions = ReadonlyMap<string, ReadonlyMap<string, Contest>>;

interface Named {
  cfgKey: string;
  /** The SyncConfig writes as a ServiceAccount. */
  delegated: boolean;
  field: string;
  kind: string;
  name: string;
}

/** The contested items of `configs` (the valid SyncConfigs that select `namespace`); empty when none contradict. */
export function contradictions(configs: Iterable<CompiledSyncConfig>, namespace: string): Contradictions {
  const identity = (apiVersion: string, kind: string, name: string) =>
    `${splitApiVersion(apiVersion).group}|${kind}|${name}`;
  const deleted = new Map<string, Named[]>();
  const synced = new Map<string, Named[]>();
  const add = (to: Map<string, Named[]>, id: string, named: Named) => {
    const list = to.get(id);
    if (list) list.push(named);
    else to.set(id, [named]);
  };
  for (const cfg of configs) {
    // An item with a problem is not performed anyway: it contests nothing.
    for (const d of cfg.deleteItems) {
      if (d.problem) continue;
      const item = named(cfg, "deleteItems", d, namespace);
      add(deleted, identity(d.apiVersion, d.kind, item.name), item);
    }
    for (const s of cfg.syncItems) {
      if (s.problem) continue;
      const item = named(cfg, "syncItems", s, namespace);
      add(synced, identity(s.apiVersion, s.kind, item.name), item);
    }
  }
  const out = new Map<string, Map<string, Contest>>();
  const contest = (item: Named, all: Named[], verb: string) => {
    // A SyncConfig that writes as espejo is contested only by others that do.
    const others = item.delegated ? all : all.filter((o) => !o.delegated);
    if (!others.length) return;
    const names = others.map((o) => o.cfgKey === item.cfgKey ? `${o.field} of this SyncConfig` : ref(o)).sort();
    const yields = item.delegated && others.some((o) => !o.delegated);
    const problem = `contradicts ${names.join(" and ")}, which ${others.length > 1 ? verb : `${verb}s`} the same ` +
      (yields
        ? "object: this SyncConfig writes as a ServiceAccount and yields to one that writes as espejo"
        : "object: neither is done while both name it");
    let items = out.get(item.cfgKey);
    if (!items) out.set(item.cfgKey, items = new Map());
    items.set(item.field, { kind: item.kind, name: item.name, problem });
  };
  for (const [id, deleters] of deleted) {
    const syncers = synced.get(id);
    if (!syncers) continue;
    for (const d of deleters) contest(d, syncers, "sync");
    for (const s of syncers) contest(s, deleters, "delete");
  }
  return out;
}

const named = (
  cfg: CompiledSyncConfig,
  list: string,
  item: { index: number; kind: string; name: string },
  namespace: string,
): Named => ({
  cfgKey: cfg.key,
  delegated: cfg.writeAs !== undefined,
  field: `.spec.${list}[${item.index}]`,
  kind: item.kind,
  name: renderTemplate(item.name, namespace),
});

const ref = (n: Named) => `${n.field} of SyncConfig ${n.cfgKey}`;
