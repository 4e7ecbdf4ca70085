/**
 * The compiled SyncConfigs, one per key, with what is derived from them: which SyncConfigs select a namespace
 * (an index rebuilt lazily per namespace version and generation) and which items name which objects. A SyncConfig
 * is compiled once per generation and uid; a deleted one and created again under the same key is a new entry.
 */
import { ItemIndex } from "./item_index.ts";
import type { ResourceInfo } from "../kube/discovery.ts";
import {
  type CompiledSyncConfig,
  type CompileOptions,
  type CompileResult,
  compileSyncConfig,
  type SyncConfig,
} from "./syncconfig.ts";
import { SERVICE_ACCOUNT_ANNOTATION } from "./identity.ts";
import { renderTemplate } from "./template.ts";
import { SelectionIndex } from "./selection_index.ts";
import type { NamespaceFacts } from "./selector.ts";
import { LabelKeys, selectorKeys } from "./label_keys.ts";

export interface Compiled {
  generation: number;
  uid: string;
  /** The ServiceAccount annotation compiled: an annotation changes no generation, yet changes whose writes these are. */
  serviceAccount: string | undefined;
  result: CompileResult;
}

export class Registry<N extends NamespaceFacts & { name: string; phase: string }> {
  constructor(
    /** The label keys the valid compiled SyncConfigs read: what a namespace with huge labels keeps. */
    readonly labelKeys: LabelKeys = new LabelKeys(),
    readonly options: CompileOptions = {},
  ) {}

  readonly #compiled = new Map<string, Compiled>();
  readonly #selection = new SelectionIndex<N>();
  readonly #items = new ItemIndex();
  #itemsStale = true;

  get size(): number {
    return this.#compiled.size;
  }

  get(key: string): Compiled | undefined {
    return this.#compiled.get(key);
  }

  keys(): string[] {
    return [...this.#compiled.keys()];
  }

  entries(): IterableIterator<[string, Compiled]> {
    return this.#compiled.entries();
  }

  /** The valid compiled SyncConfigs. */
  *valid(): Generator<CompiledSyncConfig> {
    for (const { result } of this.#compiled.values()) if (result.ok) yield result.config;
  }

  /** Whether the entry of `key` is for this generation, uid and ServiceAccount of the SyncConfig. */
  isCurrent(key: string, sc: SyncConfig | undefined): boolean {
    const known = this.#compiled.get(key);
    return !!known && !!sc && known.generation === generationOf(sc) && known.uid === uidOf(sc) &&
      known.serviceAccount === serviceAccountOf(sc);
  }

  /** Compiles `sc` unless its generation, uid and ServiceAccount are known; returns the entry and whether it is new. */
  compile(key: string, sc: SyncConfig): { entry: Compiled; changed: boolean } {
    const known = this.#compiled.get(key);
    if (known && this.isCurrent(key, sc)) return { entry: known, changed: false };
    const entry = {
      generation: generationOf(sc),
      uid: uidOf(sc),
      serviceAccount: serviceAccountOf(sc),
      result: compileSafely(sc, key, this.options),
    };
    this.labelKeys.read(key, entry.result.ok ? selectorKeys(sc) : []);
    this.#compiled.set(key, entry);
    this.#changed();
    return { entry, changed: true };
  }

  /** The SyncConfig went; false if it was not known. */
  delete(key: string): boolean {
    if (!this.#compiled.delete(key)) return false;
    this.labelKeys.drop(key);
    this.#changed();
    return true;
  }

  /**
   * Keys of the valid SyncConfigs that select `ns`, of those whose selection of it is known ({@link unknownFor}): one
   * whose label keys came in after the namespace's labels were trimmed is left out until it is read again, and nothing
   * may be written or pruned there for it.
   */
  selecting(ns: N): readonly string[] {
    const all = this.#selection.selecting(ns, () => this.valid());
    if (this.labelsKnown(ns)) return all;
    return all.filter((key) => this.labelKeys.coversFor(key, ns.labelsFor));
  }

  /**
   * Whether `ns` has every label a SyncConfig reads: false for a namespace whose labels were trimmed
   * (namespace_info.ts) before a SyncConfig that reads another key was compiled (label_keys.ts).
   */
  labelsKnown(ns: NamespaceFacts): boolean {
    return this.labelKeys.covers(ns.labelsFor);
  }

  /** Whether `ns` has every label SyncConfig `key` reads: its selection by that one is known. */
  labelsKnownFor(ns: NamespaceFacts, key: string): boolean {
    return this.labelKeys.coversFor(key, ns.labelsFor);
  }

  /**
   * The valid SyncConfigs whose selection of `ns` is not known (a key they read came in after its labels were trimmed):
   * neither selecting nor not selecting it until it is read again.
   */
  unknownFor(ns: N): string[] {
    if (this.labelsKnown(ns)) return [];
    return [...this.valid()].map((c) => c.key).filter((key) => !this.labelKeys.coversFor(key, ns.labelsFor));
  }

  /** The valid compiled SyncConfigs that select `ns`. */
  selectingConfigs(ns: N): CompiledSyncConfig[] {
    return this.selecting(ns).flatMap((k) => {
      const result = this.#compiled.get(k)?.result;
      return result?.ok ? [result.config] : [];
    });
  }

  /** The namespace went: its selection is forgotten. */
  forgetNamespace(name: string): void {
    this.#selection.forget(name);
  }

  /** Which items name which objects (rebuilt after a change). */
  items(): ItemIndex {
    if (this.#itemsStale) {
      this.#items.rebuild(this.valid());
      this.#itemsStale = false;
    }
    return this.#items;
  }

  /** Keys of the valid SyncConfigs that select `ns` and have a syncItem naming this object. */
  itemOwners(r: ResourceInfo, ns: N | undefined, name: string): string[] {
    if (!ns) return [];
    const named = this.items().naming(r.group, r.kind, ns.name, name);
    if (!named.length) return named;
    // One whose selection is not known may select it: counted, so that nothing it may want is pruned meanwhile.
    const selecting = this.selecting(ns);
    const unknown = this.unknownFor(ns);
    return named.filter((k) => selecting.includes(k) || unknown.includes(k));
  }

  /**
   * Whether `owner`, one of `owners` (the SyncConfigs with an item for an object), holds the object against
   * `claimant`: a SyncConfig of an untrusted namespace yields to one of a trusted namespace, so a team's SyncConfig
   * cannot take an object over from the platform's (lib/model/contradictions.ts has the same precedence).
   */
  holds(owner: string, claimant: string, owners: readonly string[]): boolean {
    return owners.includes(owner) && !(this.untrusted(owner) && !this.untrusted(claimant));
  }

  /** Whether the valid SyncConfig `key` is of an untrusted namespace (delegated mode; lib/model/identity.ts). */
  untrusted(key: string): boolean {
    const result = this.#compiled.get(key)?.result;
    return result?.ok === true && !result.config.trusted;
  }

  /** Whether a deleteItem of a valid SyncConfig names object `name` in `namespace`. */
  namedByDeleteItem(namespace: string, name: string): boolean {
    for (const config of this.valid()) {
      if (config.deleteItems.some((d) => renderTemplate(d.name, namespace) === name)) return true;
    }
    return false;
  }

  #changed(): void {
    this.#selection.invalidate();
    this.#itemsStale = true;
  }
}

const generationOf = (sc: SyncConfig) => typeof sc.metadata?.generation === "number" ? sc.metadata.generation : 0;
const uidOf = (sc: SyncConfig) => typeof sc.metadata?.uid === "string" ? sc.metadata.uid : "";
const serviceAccountOf = (sc: SyncConfig) => sc.metadata?.annotations?.[SERVICE_ACCOUNT_ANNOTATION];

/** Compile never throws by contract; this keeps one bug from stopping the controller anyway. */
function compileSafely(sc: SyncConfig, key: string, options: CompileOptions): CompileResult {
  try {
    return compileSyncConfig(sc, options);
  } catch (e) {
    return { ok: false, key, message: `SyncConfig ${key}: cannot be compiled: ${e instanceof Error ? e.message : e}` };
  }
}
