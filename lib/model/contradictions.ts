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
 * 3. Between untrusted contenders, the syncItem is performed and the deleteItem fails: what a team syncs is kept against
 *    another team's deleteItem, whether the object is there now or not (no marker a tenant can remove or rewrite, nor
 *    a deletion, decides it).
 * 4. Between trusted contenders neither item is performed, and each fails naming the other, as two syncItems naming one
 *    object do (lib/model/syncconfig.ts, `markShadowed`).
 *
 * Where a team's right could not be asked (an outage, its reviews past their pace), its item fails for now and is tried
 * again, and contests nothing; and while a team's syncItem is so undecided, no team's deleteItem of the object goes
 * on: an object is never lost because its keeper's review did not answer, and trusted items never wait for one.
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
  /** Not decided (a right could not be asked): tried again, not kept as the answer. */
  undecided?: true;
}

/** By SyncConfig key, then by item field (`.spec.deleteItems[0]`). */
export type Contradictions = ReadonlyMap<string, ReadonlyMap<string, Contest>>;

/** An item naming an object, as precedence needs it. */
export interface Claim {
  cfgKey: string;
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
  /**
   * Whether the untrusted SyncConfig's item may write the object it names, asked for its ServiceAccount; undefined:
   * it could not be asked.
   */
  mayWrite(claim: Claim): boolean | undefined;
}

/** Every item contends: `espejo plan`, which does not ask. */
export const CONTENDING: ContestFacts = { mayWrite: () => true };

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
  const put = (item: Claim, contest: Omit<Contest, "kind" | "name">) => {
    let items = out.get(item.cfgKey);
    if (!items) out.set(item.cfgKey, items = new Map());
    items.set(item.field, { kind: item.kind, name: item.name, ...contest });
  };
  for (const conflict of conflicts) {
    const undecided = (c: Claim) => !c.trusted && facts.mayWrite(c) === undefined;
    // A team's syncItem whose rights could not be asked may keep the object: no team's deleteItem goes on meanwhile.
    const keeping = conflict.syncers.filter(undecided);
    for (const c of [...conflict.deleters, ...conflict.syncers]) {
      if (undecided(c)) put(c, undecidedContest([c], c));
      else if (keeping.length && !c.trusted && c.list === "deleteItems") put(c, undecidedContest(keeping, c));
    }
    const contends = (c: Claim) => c.trusted || facts.mayWrite(c) === true;
    const deleters = conflict.deleters.filter((c) => contends(c) && (c.trusted || !keeping.length));
    const syncers = conflict.syncers.filter(contends);
    if (!deleters.length || !syncers.length) continue;
    for (const d of deleters) {
      const problem = contestProblem(d, syncers, "sync");
      if (problem) put(d, { problem });
    }
    for (const s of syncers) {
      const problem = contestProblem(s, deleters, "delete");
      if (problem) put(s, { problem });
    }
  }
  return out;
}

/** Why `item` is not performed against the contenders `others` (who `verb` the object), or undefined: it is. */
function contestProblem(item: Claim, others: Claim[], verb: "sync" | "delete"): string | undefined {
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
  // Both of untrusted namespaces: the syncItem keeps the object.
  if (item.list === "syncItems") return undefined;
  return `${what(others)}: what a SyncConfig of an untrusted namespace syncs is kept against another's deleteItem ` +
    "(docs/delegation.md)";
}

/** Not decided for `item`: the rights of the ServiceAccount of `unasked` (its own, or a syncItem's) could not be asked. */
function undecidedContest(unasked: Claim[], item: Claim): Omit<Contest, "kind" | "name"> {
  const whose = [...new Set(unasked.map((c) => namedTo(c, item)))].sort().join(" and ");
  const problem = unasked.some((c) => c.cfgKey === item.cfgKey)
    ? "names an object another item names here, and whether its ServiceAccount may write it could not be reviewed: " +
      "not done until it is"
    : `names an object ${whose} syncs here, whose ServiceAccount's right to write it could not be reviewed: not ` +
      "deleted until it is";
  return { problem, undecided: true };
}

/**
 * Whether the SyncConfig `to` may be told the name of SyncConfig `otherKey`: a trusted one any name, an untrusted one
 * those of its own namespace only, which its team can read. The one rule for every message that names another.
 */
export function mayBeTold(otherKey: string, to: { key: string; trusted: boolean }): boolean {
  return to.trusted || otherKey.split("/")[0] === to.key.split("/")[0];
}

/** How `other` is named to the SyncConfig of `to` ({@link mayBeTold}). */
function nameFor(other: Claim, to: Claim): string {
  if (other.cfgKey === to.cfgKey) return `${other.field} of this SyncConfig`;
  if (mayBeTold(other.cfgKey, claimant(to))) return `${other.field} of SyncConfig ${other.cfgKey}`;
  return other.trusted ? "an item of a SyncConfig of a trusted namespace" : "an item of another SyncConfig";
}

/** The SyncConfig of `other` as named to that of `to` ({@link mayBeTold}). */
function namedTo(other: Claim, to: Claim): string {
  if (other.cfgKey === to.cfgKey) return "this SyncConfig";
  return mayBeTold(other.cfgKey, claimant(to)) ? `SyncConfig ${other.cfgKey}` : "another SyncConfig";
}

const claimant = (c: Claim) => ({ key: c.cfgKey, trusted: c.trusted });

const claimOf = (
  cfg: CompiledSyncConfig,
  list: Claim["list"],
  item: { index: number; apiVersion: string; kind: string; name: string },
  namespace: string,
): Claim => ({
  cfgKey: cfg.key,
  trusted: cfg.trusted,
  list,
  index: item.index,
  field: `.spec.${list}[${item.index}]`,
  apiVersion: item.apiVersion,
  kind: item.kind,
  name: renderTemplate(item.name, namespace),
});
