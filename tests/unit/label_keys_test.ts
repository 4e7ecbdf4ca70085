/**
 * The label keys selectors read, counted per SyncConfig (lib/model/label_keys.ts): a key goes with the last
 * SyncConfig that reads it, a key that comes in grows the version, and a namespace trimmed at a version has every key
 * held now unless one came in after it.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { LabelKeys, selectorKeys } from "../../lib/model/label_keys.ts";
import type { NamespaceInfo } from "../../lib/model/namespace_info.ts";
import { Registry } from "../../lib/model/registry.ts";
import type { SyncConfig } from "../../lib/model/syncconfig.ts";

type Step = [cfgKey: string, keys: string[]];

const CASES: { name: string; steps: Step[]; held: string[]; version: number; came: boolean[] }[] = [
  { name: "nothing read", steps: [], held: [], version: 0, came: [] },
  { name: "one SyncConfig's keys", steps: [["a", ["team", "tier"]]], held: ["team", "tier"], version: 1, came: [true] },
  {
    name: "a key read twice by one selector counts once",
    steps: [["a", ["team", "team"]], ["a", []]],
    held: [],
    version: 1,
    came: [true, false],
  },
  {
    name: "an edit with the same keys brings none",
    steps: [["a", ["team"]], ["a", ["team"]]],
    held: ["team"],
    version: 1,
    came: [true, false],
  },
  {
    name: "an edit with fresh keys replaces the old ones",
    steps: [["a", ["k1", "k2"]], ["a", ["k3", "k4"]], ["a", ["k5"]]],
    held: ["k5"],
    version: 3,
    came: [true, true, true],
  },
  {
    name: "a key another SyncConfig reads stays",
    steps: [["a", ["team", "fresh"]], ["b", ["team"]], ["a", []]],
    held: ["team"],
    version: 1,
    came: [true, false, false],
  },
  {
    name: "a key that went and comes back comes in again",
    steps: [["a", ["team"]], ["a", []], ["a", ["team"]]],
    held: ["team"],
    version: 2,
    came: [true, false, true],
  },
  {
    name: "the last reader's drop empties it",
    steps: [["a", ["team"]], ["b", ["team", "tier"]], ["b", []], ["a", []]],
    held: [],
    version: 2,
    came: [true, true, false, false],
  },
];

for (const c of CASES) {
  Deno.test(`LabelKeys.read: ${c.name}`, () => {
    const keys = new LabelKeys();
    const came = c.steps.map(([cfg, read]) => keys.read(cfg, read));
    assert.deepEqual(came, c.came, "which steps brought a key");
    assert.equal(keys.version, c.version);
    assert.equal(keys.size, c.held.length);
    for (const k of c.held) assert.ok(keys.has(k), k);
  });
}

Deno.test("LabelKeys.covers: a namespace trimmed at a version lacks only keys that came in after it", () => {
  const keys = new LabelKeys();
  assert.equal(keys.covers(undefined), true, "kept whole: it has every key");
  assert.equal(keys.covers(0), true, "trimmed before any key was read, and none is read");
  keys.read("espejo/platform", ["team"]);
  const v1 = keys.version;
  assert.equal(keys.covers(0), false, "trimmed before team came");
  assert.equal(keys.covers(v1), true);
  keys.read("team/own", ["fresh-1"]);
  const v2 = keys.version;
  assert.equal(keys.covers(v1), false, "fresh-1 came after it");
  keys.read("team/own", ["fresh-2"]);
  assert.equal(keys.covers(v2), false, "fresh-2 came after it, though fresh-1 went");
  keys.drop("team/own");
  assert.equal(keys.covers(v1), true, "what it lacked went: known again, without a read");
  assert.equal(keys.covers(v2), true, "a key that goes makes no namespace stale");
  assert.equal(keys.covers(0), false, "team is still read");
  keys.drop("espejo/platform");
  assert.equal(keys.covers(0), true, "nothing is read");
  keys.read("espejo/platform", ["team"]);
  assert.equal(keys.covers(v2), false, "a key back after it went comes in again");
});

Deno.test("selectorKeys: the keys of matchLabels and matchExpressions, none for names", () => {
  const sc = (namespaceSelector: unknown) => ({ spec: { namespaceSelector } }) as SyncConfig;
  assert.deepEqual(
    selectorKeys(
      sc({ labelSelector: { matchLabels: { a: "1" }, matchExpressions: [{ key: "b", operator: "Exists" }] } }),
    ),
    ["a", "b"],
  );
  assert.deepEqual(selectorKeys(sc({ matchNames: ["x"] })), []);
});

const config = (name: string, read: string[] | "invalid", generation: number): SyncConfig => ({
  metadata: { namespace: "team", name, generation, uid: name },
  spec: read === "invalid"
    ? { namespaceSelector: { labelSelector: { matchExpressions: [{ key: "bad key", operator: "Exists" }] } } }
    : {
      namespaceSelector: {
        labelSelector: { matchExpressions: read.map((key) => ({ key, operator: "Exists" })) },
        matchNames: ["always"],
      },
      syncItems: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c" } }],
    },
});

Deno.test("Registry: an invalid generation and a deleted SyncConfig read no keys", () => {
  const registry = new Registry<NamespaceInfo>();
  registry.compile("team/a", config("a", ["team", "tier"], 1));
  assert.equal(registry.labelKeys.size, 2);
  registry.compile("team/a", config("a", "invalid", 2));
  assert.equal(registry.labelKeys.size, 0, "an invalid generation selects nothing and reads nothing");
  registry.compile("team/a", config("a", ["tier"], 3));
  assert.deepEqual(registry.labelKeys.readBy("team/a"), ["tier"]);
  registry.delete("team/a");
  assert.equal(registry.labelKeys.size, 0);
  assert.deepEqual(registry.labelKeys.readBy("team/a"), []);
});

Deno.test("Registry: compile and delete in any order leave the keys of the live SyncConfigs, and namespaces trimmed before stay known only for keys that were held", () => {
  const KEYS = ["a", "b", "c", "d", "e"];
  const NAMES = ["x", "y", "z"];
  const op = fc.oneof(
    fc.record({
      kind: fc.constant("compile" as const),
      name: fc.constantFrom(...NAMES),
      read: fc.oneof(fc.subarray(KEYS), fc.constant("invalid" as const)),
    }),
    fc.record({ kind: fc.constant("delete" as const), name: fc.constantFrom(...NAMES) }),
  );
  fc.assert(
    fc.property(fc.array(op, { maxLength: 40 }), (ops) => {
      const registry = new Registry<NamespaceInfo>();
      const keys = registry.labelKeys;
      const live = new Map<string, string[]>();
      /** What was held at each version a namespace may be trimmed at. */
      const heldAt = new Map<number, Set<string>>([[0, new Set()]]);
      let generation = 0;
      for (const o of ops) {
        const cfgKey = `team/${o.name}`;
        const coveredBefore = [...heldAt.keys()].filter((v) => keys.covers(v));
        if (o.kind === "compile") {
          registry.compile(cfgKey, config(o.name, o.read, ++generation));
          if (o.read === "invalid") live.delete(cfgKey);
          else live.set(cfgKey, o.read);
        } else {
          registry.delete(cfgKey);
          live.delete(cfgKey);
          for (const v of coveredBefore) assert.ok(keys.covers(v), `a deletion made version ${v} stale`);
        }
        const union = new Set([...live.values()].flat());
        assert.equal(keys.size, union.size, `held ${keys.size}, the live SyncConfigs read ${[...union]}`);
        for (const k of KEYS) assert.equal(keys.has(k), union.has(k), k);
        heldAt.set(keys.version, new Set(union));
        // A namespace trimmed at v is taken for known only if it kept every key read now.
        for (const [v, held] of heldAt) {
          if (keys.covers(v)) { for (const k of union) assert.ok(held.has(k), `${k} missing at version ${v}`); }
        }
        assert.ok(keys.covers(keys.version), "one trimmed now has them all");
      }
    }),
    { numRuns: 500 },
  );
});

Deno.test("LabelKeys.coversFor: a team's fresh keys make only its own selection of a trimmed namespace unknown", () => {
  const keys = new LabelKeys();
  keys.read("espejo/platform", ["tenant"]);
  const trimmedAt = keys.version;
  keys.read("team/t", ["fresh-1"]);
  assert.equal(keys.covers(trimmedAt), false, "the namespace lacks a key some SyncConfig reads");
  assert.equal(keys.coversFor("espejo/platform", trimmedAt), true, "the platform's selection stays known");
  assert.equal(keys.coversFor("team/t", trimmedAt), false, "the team's is not");
  keys.read("team/t", ["fresh-2"]);
  assert.equal(keys.coversFor("espejo/platform", trimmedAt), true, "however often the team brings fresh keys");
  assert.equal(keys.coversFor("team/t", undefined), true, "labels kept whole have every key");
  keys.drop("team/t");
  assert.equal(keys.covers(trimmedAt), true, "the team gone, the namespace is known again");
});
