/**
 * Which items contradict each other in one namespace, and which of them is performed (lib/model/contradictions.ts):
 * tables of SyncConfigs, by trust, by right and by list; a property test of the precedence.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import {
  type Claim,
  conflictsIn,
  CONTENDING,
  type ContestFacts,
  contradictions,
} from "../../lib/model/contradictions.ts";
import { type CompiledSyncConfig, compileSyncConfig } from "../../lib/model/syncconfig.ts";

type Spec = { syncItems?: unknown[]; deleteItems?: unknown[] };

/** Delegated mode: only espejo's namespace is trusted. */
const TRUSTED = { trustedNamespaces: ["espejo"] };

function config(name: string, spec: Spec, annotations?: Record<string, string>): CompiledSyncConfig {
  const r = compileSyncConfig({
    metadata: { namespace: "espejo", name, generation: 1, uid: name, annotations },
    spec: { namespaceSelector: { matchNames: [".*"] }, ...spec } as never,
  }, TRUSTED);
  if (!r.ok) throw new Error(r.message);
  return r.config;
}

const cm = (name: string) => ({ apiVersion: "v1", kind: "ConfigMap", metadata: { name }, data: {} });
const policy = (apiVersion: string, name: string) => ({ apiVersion, kind: "NetworkPolicy", metadata: { name } });
const del = (apiVersion: string, kind: string, name: string) => ({ apiVersion, kind, name });

/** The contested items as `cfg field: problem`, sorted. */
function contested(configs: CompiledSyncConfig[], namespace = "team-a", facts: ContestFacts = CONTENDING): string[] {
  const out: string[] = [];
  for (const [cfgKey, items] of contradictions(conflictsIn(configs, namespace), facts)) {
    for (const [field, { problem }] of items) out.push(`${cfgKey} ${field}: ${problem}`);
  }
  return out.sort();
}

const NEITHER = "neither is done while both name it";

const cases: { name: string; configs: CompiledSyncConfig[]; want: string[] }[] = [
  {
    name: "one deletes what another syncs: both items, each naming the other",
    configs: [
      config("deny", { deleteItems: [del("v1", "ConfigMap", "other"), del("v1", "ConfigMap", "shared")] }),
      config("sync", { syncItems: [cm("mine"), cm("shared")] }),
    ],
    want: [
      `espejo/deny .spec.deleteItems[1]: contradicts .spec.syncItems[1] of SyncConfig espejo/sync, which syncs the ` +
      `same object: ${NEITHER}`,
      `espejo/sync .spec.syncItems[1]: contradicts .spec.deleteItems[1] of SyncConfig espejo/deny, which deletes the ` +
      `same object: ${NEITHER}`,
    ],
  },
  {
    name: "names are compared as rendered in the namespace",
    configs: [
      config("deny", { deleteItems: [del("v1", "ConfigMap", "cm-team-a")] }),
      config("sync", { syncItems: [cm("cm-${PROJECT_NAME}")] }),
    ],
    want: [
      `espejo/deny .spec.deleteItems[0]: contradicts .spec.syncItems[0] of SyncConfig espejo/sync, which syncs the ` +
      `same object: ${NEITHER}`,
      `espejo/sync .spec.syncItems[0]: contradicts .spec.deleteItems[0] of SyncConfig espejo/deny, which deletes the ` +
      `same object: ${NEITHER}`,
    ],
  },
  {
    name: "a rendered name that differs in another namespace contests nothing there",
    configs: [
      config("deny", { deleteItems: [del("v1", "ConfigMap", "cm-team-b")] }),
      config("sync", { syncItems: [cm("cm-${PROJECT_NAME}")] }),
    ],
    want: [],
  },
  {
    name: "one API group is one object, whatever the version",
    configs: [
      config("deny", { deleteItems: [del("networking.k8s.io/v1beta1", "NetworkPolicy", "allow")] }),
      config("sync", { syncItems: [policy("networking.k8s.io/v1", "allow")] }),
    ],
    want: [
      `espejo/deny .spec.deleteItems[0]: contradicts .spec.syncItems[0] of SyncConfig espejo/sync, which syncs the ` +
      `same object: ${NEITHER}`,
      `espejo/sync .spec.syncItems[0]: contradicts .spec.deleteItems[0] of SyncConfig espejo/deny, which deletes the ` +
      `same object: ${NEITHER}`,
    ],
  },
  {
    name: "another kind or another group under the same name is another object",
    configs: [
      config("deny", { deleteItems: [del("v1", "Secret", "shared"), del("example.com/v1", "ConfigMap", "shared")] }),
      config("sync", { syncItems: [cm("shared")] }),
    ],
    want: [],
  },
  {
    name: "two SyncConfigs deleting one object agree",
    configs: [
      config("a", { deleteItems: [del("v1", "ConfigMap", "old")] }),
      config("b", { deleteItems: [del("v1", "ConfigMap", "old")] }),
    ],
    want: [],
  },
  {
    name: "one SyncConfig that deletes what it syncs contradicts itself",
    configs: [config("self", { syncItems: [cm("x")], deleteItems: [del("v1", "ConfigMap", "x")] })],
    want: [
      `espejo/self .spec.deleteItems[0]: contradicts .spec.syncItems[0] of this SyncConfig, which syncs the same ` +
      `object: ${NEITHER}`,
      `espejo/self .spec.syncItems[0]: contradicts .spec.deleteItems[0] of this SyncConfig, which deletes the same ` +
      `object: ${NEITHER}`,
    ],
  },
  {
    name: "one deleteItem against two syncing SyncConfigs names both",
    configs: [
      config("deny", { deleteItems: [del("v1", "ConfigMap", "shared")] }),
      config("b", { syncItems: [cm("shared")] }),
      config("c", { syncItems: [cm("shared")] }),
    ],
    want: [
      `espejo/b .spec.syncItems[0]: contradicts .spec.deleteItems[0] of SyncConfig espejo/deny, which deletes the ` +
      `same object: ${NEITHER}`,
      `espejo/c .spec.syncItems[0]: contradicts .spec.deleteItems[0] of SyncConfig espejo/deny, which deletes the ` +
      `same object: ${NEITHER}`,
      `espejo/deny .spec.deleteItems[0]: contradicts .spec.syncItems[0] of SyncConfig espejo/b and ` +
      `.spec.syncItems[0] of SyncConfig espejo/c, which sync the same object: ${NEITHER}`,
    ],
  },
  {
    name: "an item with a problem (here: shadowed by a later one) contests nothing; the later one does",
    configs: [
      config("deny", { deleteItems: [del("v1", "ConfigMap", "shared")] }),
      config("sync", { syncItems: [cm("shared"), cm("shared")] }),
    ],
    want: [
      `espejo/deny .spec.deleteItems[0]: contradicts .spec.syncItems[1] of SyncConfig espejo/sync, which syncs the ` +
      `same object: ${NEITHER}`,
      `espejo/sync .spec.syncItems[1]: contradicts .spec.deleteItems[0] of SyncConfig espejo/deny, which deletes the ` +
      `same object: ${NEITHER}`,
    ],
  },
  {
    name: "a deleteItem with a problem (no apiVersion) contests nothing",
    configs: [
      config("deny", { deleteItems: [{ kind: "ConfigMap", name: "shared" }] }),
      config("sync", { syncItems: [cm("shared")] }),
    ],
    want: [],
  },
];

for (const c of cases) {
  Deno.test(`contradictions: ${c.name}`, () => {
    assert.deepEqual(contested(c.configs), c.want);
  });
}

Deno.test("contradictions: the order of the SyncConfigs does not change the decision", () => {
  const configs = cases[cases.length - 3].configs;
  assert.deepEqual(contested([...configs].reverse()), contested(configs));
});

Deno.test("contradictions: a contested item carries the object it names, rendered in the namespace", () => {
  const found = contradictions(conflictsIn([
    config("deny", { deleteItems: [del("v1", "ConfigMap", "cm-team-a")] }),
    config("sync", { syncItems: [cm("cm-${PROJECT_NAME}")] }),
  ], "team-a"));
  const { kind, name } = found.get("espejo/sync")!.get(".spec.syncItems[0]")!;
  assert.deepEqual({ kind, name }, { kind: "ConfigMap", name: "cm-team-a" });
});

/** A team's SyncConfig in namespace `namespace` (untrusted), writing as its ServiceAccount `writer`. */
function teamConfig(name: string, spec: Spec, namespace = "team"): CompiledSyncConfig {
  const r = compileSyncConfig({
    metadata: {
      namespace,
      name,
      generation: 1,
      uid: name,
      annotations: { "sync.appuio.ch/service-account": "writer" },
    },
    spec: { namespaceSelector: { matchNames: [".*"] }, ...spec } as never,
  }, TRUSTED);
  if (!r.ok) throw new Error(r.message);
  return r.config;
}

const YIELDS = "a SyncConfig of a trusted namespace outranks this one, whose namespace is not trusted " +
  "(docs/delegation.md)";
const KEPT = "what a SyncConfig of an untrusted namespace syncs is kept against another's deleteItem " +
  "(docs/delegation.md)";

/** Facts: the items (`cfgKey field`) whose ServiceAccount may write their object; `unasked`: could not be asked. */
const facts = (writers: string[], unasked: string[] = []): ContestFacts => ({
  mayWrite: (c: Claim) =>
    unasked.includes(`${c.cfgKey} ${c.field}`) ? undefined : writers.includes(`${c.cfgKey} ${c.field}`),
});

const rankCases: { name: string; configs: CompiledSyncConfig[]; facts?: ContestFacts; want: string[] }[] = [
  {
    name: "a team's deleteItem does not switch off the platform's syncItem: only the team's item fails",
    configs: [
      config("platform", { syncItems: [policy("networking.k8s.io/v1", "deny-all")] }),
      teamConfig("mine", { deleteItems: [del("networking.k8s.io/v1", "NetworkPolicy", "deny-all")] }),
    ],
    want: [
      "team/mine .spec.deleteItems[0]: contradicts an item of a SyncConfig of a trusted namespace, which syncs " +
      `the same object: ${YIELDS}`,
    ],
  },
  {
    name: "a team's syncItem does not switch off the platform's deleteItem",
    configs: [
      config("platform", { deleteItems: [del("v1", "ConfigMap", "legacy")] }),
      teamConfig("mine", { syncItems: [cm("legacy")] }),
    ],
    want: [
      "team/mine .spec.syncItems[0]: contradicts an item of a SyncConfig of a trusted namespace, which deletes " +
      `the same object: ${YIELDS}`,
    ],
  },
  {
    name: "a trusted namespace's SyncConfig that names a ServiceAccount still outranks a team's",
    configs: [
      config("platform", { syncItems: [cm("x")] }, { "sync.appuio.ch/service-account": "platform-writer" }),
      teamConfig("mine", { deleteItems: [del("v1", "ConfigMap", "x")] }),
    ],
    want: [
      "team/mine .spec.deleteItems[0]: contradicts an item of a SyncConfig of a trusted namespace, which syncs " +
      `the same object: ${YIELDS}`,
    ],
  },
  {
    name: "two trusted SyncConfigs, one naming a ServiceAccount: neither, as between any two trusted ones",
    configs: [
      config("p1", { syncItems: [cm("x")] }, { "sync.appuio.ch/service-account": "platform-writer" }),
      config("p2", { deleteItems: [del("v1", "ConfigMap", "x")] }),
    ],
    want: [
      `espejo/p1 .spec.syncItems[0]: contradicts .spec.deleteItems[0] of SyncConfig espejo/p2, which deletes the same object: ${NEITHER}`,
      `espejo/p2 .spec.deleteItems[0]: contradicts .spec.syncItems[0] of SyncConfig espejo/p1, which syncs the same object: ${NEITHER}`,
    ],
  },
  {
    name: "two SyncConfigs of one team, both may write: the syncItem is kept, the deleteItem fails naming it",
    configs: [
      teamConfig("a", { deleteItems: [del("v1", "ConfigMap", "x")] }),
      teamConfig("b", { syncItems: [cm("x")] }),
    ],
    want: [
      `team/a .spec.deleteItems[0]: contradicts .spec.syncItems[0] of SyncConfig team/b, which syncs the same object: ${KEPT}`,
    ],
  },
  {
    name: "two teams that may both write: the syncItem is kept, and the deleting team is not told the other's name",
    configs: [
      teamConfig("a", { deleteItems: [del("v1", "ConfigMap", "x")] }, "team-a"),
      teamConfig("b", { syncItems: [cm("x")] }, "team-b"),
    ],
    want: [
      `team-a/a .spec.deleteItems[0]: contradicts an item of another SyncConfig, which syncs the same object: ${KEPT}`,
    ],
  },
  {
    name: "a team whose ServiceAccount may not delete the object contests nothing: the other team's item goes on",
    configs: [
      teamConfig("a", { deleteItems: [del("v1", "ConfigMap", "x")] }, "team-a"),
      teamConfig("b", { syncItems: [cm("x")] }, "team-b"),
    ],
    facts: facts(["team-b/b .spec.syncItems[0]"]),
    want: [],
  },
  {
    name: "a team whose ServiceAccount may not delete contests no trusted item either, and is not told it yields",
    configs: [
      config("platform", { syncItems: [cm("x")] }),
      teamConfig("a", { deleteItems: [del("v1", "ConfigMap", "x")] }, "team-a"),
    ],
    facts: facts([]),
    want: [],
  },
  {
    name: "a syncItem whose rights could not be asked keeps the object: the other team's deleteItem waits",
    configs: [
      teamConfig("a", { deleteItems: [del("v1", "ConfigMap", "x")] }, "team-a"),
      teamConfig("b", { syncItems: [cm("x")] }, "team-b"),
    ],
    facts: facts(["team-a/a .spec.deleteItems[0]"], ["team-b/b .spec.syncItems[0]"]),
    want: [
      "team-a/a .spec.deleteItems[0]: names an object another SyncConfig syncs here, whose ServiceAccount's right to " +
      "write it could not be reviewed: not deleted until it is",
      "team-b/b .spec.syncItems[0]: names an object another item names here, and whether its ServiceAccount may write " +
      "it could not be reviewed: not done until it is",
    ],
  },
  {
    name: "a deleteItem whose rights could not be asked waits, and vetoes nothing: the syncItem goes on",
    configs: [
      teamConfig("a", { deleteItems: [del("v1", "ConfigMap", "x")] }, "team-a"),
      teamConfig("b", { syncItems: [cm("x")] }, "team-b"),
    ],
    facts: facts(["team-b/b .spec.syncItems[0]"], ["team-a/a .spec.deleteItems[0]"]),
    want: [
      "team-a/a .spec.deleteItems[0]: names an object another item names here, and whether its ServiceAccount may " +
      "write it could not be reviewed: not done until it is",
    ],
  },
  {
    name: "a team's syncItem that may write is not kept against a trusted deleteItem",
    configs: [
      config("platform", { deleteItems: [del("v1", "ConfigMap", "x")] }),
      teamConfig("b", { syncItems: [cm("x")] }, "team-b"),
    ],
    facts: facts(["team-b/b .spec.syncItems[0]"]),
    want: [
      "team-b/b .spec.syncItems[0]: contradicts an item of a SyncConfig of a trusted namespace, which deletes the " +
      `same object: ${YIELDS}`,
    ],
  },
  {
    name: "two platform SyncConfigs contradicting each other and a team's: both platform items fail, and the team's",
    configs: [
      config("p1", { deleteItems: [del("v1", "ConfigMap", "x")] }),
      config("p2", { syncItems: [cm("x")] }),
      teamConfig("t", { deleteItems: [del("v1", "ConfigMap", "x")] }),
    ],
    want: [
      `espejo/p1 .spec.deleteItems[0]: contradicts .spec.syncItems[0] of SyncConfig espejo/p2, which syncs the same object: ${NEITHER}`,
      `espejo/p2 .spec.syncItems[0]: contradicts .spec.deleteItems[0] of SyncConfig espejo/p1, which deletes the same object: ${NEITHER}`,
      `team/t .spec.deleteItems[0]: contradicts an item of a SyncConfig of a trusted namespace, which syncs the same object: ${YIELDS}`,
    ],
  },
];

for (const { name, configs, facts, want } of rankCases) {
  Deno.test(`contradictions between a team's and the platform's SyncConfigs: ${name}`, () => {
    assert.deepEqual(contested(configs, "team-a", facts), want.sort());
  });
}

Deno.test("contradictions without delegated mode: every SyncConfig is trusted, whatever it writes as", () => {
  const off = (name: string, spec: Spec, annotations?: Record<string, string>) => {
    const r = compileSyncConfig({
      metadata: { namespace: "team", name, generation: 1, uid: name, annotations },
      spec: { namespaceSelector: { matchNames: [".*"] }, ...spec } as never,
    });
    if (!r.ok) throw new Error(r.message);
    return r.config;
  };
  const found = contested([
    off("sa", { deleteItems: [del("v1", "ConfigMap", "x")] }, { "sync.appuio.ch/service-account": "writer" }),
    off("plain", { syncItems: [cm("x")] }),
  ]);
  assert.equal(found.length, 2);
  for (const line of found) assert.match(line, new RegExp(NEITHER));
});

/**
 * The precedence as properties, over random SyncConfigs of trusted and untrusted namespaces and rights:
 * a non-contender (untrusted, may not write) is never contested and never contests; a trusted contender's item is
 * never failed by an untrusted one; an untrusted SyncConfig is never told a name outside its own namespace.
 */
Deno.test("contradictions: precedence holds for any SyncConfigs and rights (property)", () => {
  const party = fc.record({
    trusted: fc.boolean(),
    namespace: fc.constantFrom("team-a", "team-b"),
    deletes: fc.boolean(),
    mayWrite: fc.boolean(),
  });
  fc.assert(fc.property(fc.array(party, { minLength: 1, maxLength: 5 }), (parties) => {
    const configs = parties.map((p, i) => {
      const spec = p.deletes ? { deleteItems: [del("v1", "ConfigMap", "x")] } : { syncItems: [cm("x")] };
      return p.trusted ? config(`p${i}`, spec) : teamConfig(`t${i}`, spec, p.namespace);
    });
    const byKey = new Map(configs.map((c, i) => [c.key, parties[i]]));
    const f = facts(configs.filter((c) => byKey.get(c.key)!.mayWrite).map((c) => `${c.key} ${fieldOf(c)}`));
    const out = contradictions(conflictsIn(configs, "team-a"), f);
    for (const c of configs) {
      const p = byKey.get(c.key)!;
      const contest = out.get(c.key)?.get(fieldOf(c));
      if (!p.trusted && !p.mayWrite) assert.equal(contest, undefined, "a non-contender is never contested");
      if (!contest) continue;
      const against = configs.filter((o) => byKey.get(o.key)!.deletes !== p.deletes);
      const contenders = against.filter((o) => byKey.get(o.key)!.trusted || byKey.get(o.key)!.mayWrite);
      assert.ok(contenders.length > 0, "only a contender contests");
      if (p.trusted) assert.ok(contenders.some((o) => byKey.get(o.key)!.trusted), "only trust outranks trust");
      if (!p.trusted && !p.deletes) {
        assert.ok(contenders.some((o) => byKey.get(o.key)!.trusted), "a team's syncItem yields to trust only");
      }
      if (!p.trusted) {
        for (const named of contest.problem.matchAll(/SyncConfig ([\w-]+)\/[\w-]+/g)) {
          assert.equal(named[1], c.namespace, `told a name outside its namespace: ${contest.problem}`);
        }
      }
    }
  }));
});

const fieldOf = (c: CompiledSyncConfig) => c.deleteItems.length ? ".spec.deleteItems[0]" : ".spec.syncItems[0]";
