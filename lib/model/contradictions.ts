/**
 * Items that contradict each other in one namespace: a deleteItem that names an object a syncItem syncs there (same
 * API group, kind and rendered name), of two SyncConfigs that both select the namespace or of one. Performed as
 * written, one would delete what the other creates again on every sync, and each would see the other's writes as a
 * fight. Decided once per unit, before anything is written, by precedence (docs/delegation.md has it as a table):
 *
 * 1. Only a contender contests. A SyncConfig of a trusted namespace always contends; one of an untrusted namespace (a
 *    team's, lib/model/identity.ts) only with an item its ServiceAccount may write (delete for a deleteItem, create and
 *    update for a syncItem; asked as it, lib/sync/rights.ts). An item that may not is no contender: it is performed,
 *    and fails on its own side with the API server's answer, while the other SyncConfig's item goes on. So a team
 *    cannot switch off another's item where its ServiceAccount has no right.
 * 2. Trust outranks: a trusted contender's item is performed, an untrusted one's on the other side fails.
 * 3. Between untrusted contenders, the holder of the object (its owner annotation names a SyncConfig with a syncItem for
 *    it here) keeps it against the others.
 * 4. Otherwise neither item is performed, and each fails naming the other, as two syncItems naming one object do
 *    (lib/model/syncconfig.ts, `markShadowed`).
 *
 * An untrusted SyncConfig is told the names of SyncConfigs of its own namespace only, which its team can read; others
 * are "another SyncConfig".
 *
 * Pure: the SyncConfigs that select the namespace and the facts asked in, the contested items out.
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

/** An item naming an object, as precedence needs it. */
export interface Claim {
  cfgKey: string;
  /** The SyncConfig's namespace: who may be told its name. */
  cfgNamespace: string;
  trusted: boolean;
  list: "deleteItems" | "syncItems";
  index: number;
  /** `.spec.deleteItems[0]` */
  field: string;
  apiVersion: string;
  kind: string;
  /** The object's name, rendered in the namespace. */
  name: string;
}

/** One object that deleteItems delete and syncItems sync in one namespace. */
export interface Conflict {
  deleters: Claim[];
  syncers: Claim[];
}

/** What precedence needs besides the SyncConfigs, asked by the caller. */
export interface ContestFacts {
  /** Whether the untrusted SyncConfig's item may write the object it names, asked as its ServiceAccount. */
  mayWrite(claim: Claim): boolean;
  /** The SyncConfig whose owner annotation holds the object, when it is one of the conflict's syncers. */
  holder(conflict: Conflict): string | undefined;
}

/** Every item contends and no one holds anything: `espejo plan` without `--check-rights`. */
export const CONTENDING: ContestFacts = { mayWrite: () => true, holder: () => undefined };

/**
 * The conflicts among `configs` (the valid SyncConfigs that select `namespace`). `excluded`: items that fail before
 * anything is decided for them (one whose ServiceAccount may not read its object): they contest nothing.
 */
export function conflictsIn(
  configs: Iterable<CompiledSyncConfig>,
  namespace: string,
  excluded: (cfgKey: string, field: string) => boolean = () => false,
): Conflict[] {
  const identity = (c: Claim) => `${splitApiVersion(c.apiVersion).group}|${c.kind}|${c.name}`;
  const byObject = new Map<string, Conflict>();
  const add = (claim: Claim) => {
    if (excluded(claim.cfgKey, claim.field)) return;
    const id = identity(claim);
    let conflict = byObject.get(id);
    if (!conflict) byObject.set(id, conflict = { deleters: [], syncers: [] });
    (claim.list === "deleteItems" ? conflict.deleters : conflict.syncers).push(claim);
  };
  for (const cfg of configs) {
    // An item with a problem is not performed anyway: it contests nothing.
    for (const d of cfg.deleteItems) if (!d.problem) add(claimOf(cfg, "deleteItems", d, namespace));
    for (const s of cfg.syncItems) if (!s.problem) add(claimOf(cfg, "syncItems", s, namespace));
  }
  return [...byObject.values()].filter((c) => c.deleters.length && c.syncers.length);
}

/** The contested items of `conflicts`, by the precedence of the file comment; empty when none is. */
export function contradictions(conflicts: readonly Conflict[], facts: ContestFacts = CONTENDING): Contradictions {
  const out = new Map<string, Map<string, Contest>>();
  const contends = (c: Claim) => c.trusted || facts.mayWrite(c);
  for (const conflict of conflicts) {
    const deleters = conflict.deleters.filter(contends);
    const syncers = conflict.syncers.filter(contends);
    if (!deleters.length || !syncers.length) continue;
    const holder = facts.holder(conflict);
    const decide = (item: Claim, others: Claim[], verb: "sync" | "delete") => {
      const problem = contestProblem(item, others, verb, holder);
      if (!problem) return;
      let items = out.get(item.cfgKey);
      if (!items) out.set(item.cfgKey, items = new Map());
      items.set(item.field, { kind: item.kind, name: item.name, problem });
    };
    for (const d of deleters) decide(d, syncers, "sync");
    for (const s of syncers) decide(s, deleters, "delete");
  }
  return out;
}

/** Why `item` is not performed against the contenders `others` (who `verb` the object), or undefined: it is. */
function contestProblem(item: Claim, others: Claim[], verb: string, holder: string | undefined): string | undefined {
  const trusted = others.filter((o) => o.trusted);
  const what = (against: Claim[]) => {
    const names = [...new Set(against.map((o) => nameFor(o, item)))].sort();
    return `contradicts ${names.join(" and ")}, which ${names.length > 1 ? verb : `${verb}s`} the same object`;
  };
  if (item.trusted) {
    return trusted.length ? `${what(trusted)}: neither is done while both name it` : undefined;
  }
  if (trusted.length) {
    return `${what(trusted)}: a SyncConfig of a trusted namespace outranks this one, whose namespace is not ` +
      "trusted (docs/delegation.md)";
  }
  if (holder === item.cfgKey) return undefined;
  const holding = others.filter((o) => o.cfgKey === holder);
  if (holding.length) {
    return `${what(holding)} and holds it: the SyncConfig that holds an object keeps it against another of an ` +
      "untrusted namespace (docs/delegation.md)";
  }
  return `${what(others)}: neither is done while both name it`;
}

/** How `other` is named to the SyncConfig of `to`: by name only to trusted ones and within one namespace. */
function nameFor(other: Claim, to: Claim): string {
  if (other.cfgKey === to.cfgKey) return `${other.field} of this SyncConfig`;
  if (to.trusted || other.cfgNamespace === to.cfgNamespace) return `${other.field} of SyncConfig ${other.cfgKey}`;
  return other.trusted ? "an item of a SyncConfig of a trusted namespace" : "an item of another SyncConfig";
}

const claimOf = (
  cfg: CompiledSyncConfig,
  list: Claim["list"],
  item: { index: number; apiVersion: string; kind: string; name: string },
  namespace: string,
): Claim => ({
  cfgKey: cfg.key,
  cfgNamespace: cfg.namespace,
  trusted: cfg.trusted,
  list,
  index: item.index,
  field: `.spec.${list}[${item.index}]`,
  apiVersion: item.apiVersion,
  kind: item.kind,
  name: renderTemplate(item.name, namespace),
});
