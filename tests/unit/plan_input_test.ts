import assert from "node:assert/strict";
import { join } from "node:path";
import { isManifestName, namespaceOf, type NamespaceRule, readManifests } from "../../lib/plan/input.ts";
import { namespaceOfContext } from "../../lib/plan/context_namespace.ts";
import { readSources } from "../../lib/plan/sources.ts";

const sc = (name: string, namespace?: string) => ({
  apiVersion: "sync.appuio.ch/v1alpha1",
  kind: "SyncConfig",
  metadata: namespace ? { name, namespace } : { name },
  spec: { syncItems: [] },
});
const cm = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c" } };
const yaml = (...docs: unknown[]) => docs.map((d) => JSON.stringify(d)).join("\n---\n");

const keys = (text: string, rule: NamespaceRule = {}) => {
  const r = readManifests(text, "f.yaml", rule);
  return { configs: r.syncConfigs.map((s) => `${s.metadata?.namespace}/${s.metadata?.name}`), ignored: r.ignored };
};

Deno.test("readManifests reads what kubectl apply -f reads", async (t) => {
  const cases: [string, string, NamespaceRule, string[], string[]][] = [
    ["one JSON object", JSON.stringify(sc("a", "x")), {}, ["x/a"], []],
    ["several YAML documents", yaml(sc("a", "x"), sc("b", "y")), {}, ["x/a", "y/b"], []],
    ["empty documents are skipped", `---\n${yaml(sc("a", "x"))}\n---\n`, {}, ["x/a"], []],
    [
      "a v1 List, as kubectl get -o yaml prints it",
      JSON.stringify({ apiVersion: "v1", kind: "List", items: [sc("a", "x"), cm, sc("b", "x")] }),
      {},
      ["x/a", "x/b"],
      ["ConfigMap c (f.yaml: document 1, item 1)"],
    ],
    [
      "a SyncConfigList whose items leave out apiVersion and kind",
      JSON.stringify({
        apiVersion: "sync.appuio.ch/v1alpha1",
        kind: "SyncConfigList",
        items: [{ metadata: { name: "a", namespace: "x" }, spec: {} }],
      }),
      {},
      ["x/a"],
      [],
    ],
    ["other kinds are set aside by name", yaml(cm, sc("a", "x")), {}, ["x/a"], ["ConfigMap c (f.yaml: document 1)"]],
    ["no namespace: the context's", yaml(sc("a")), { context: "ctx" }, ["ctx/a"], []],
    ["no namespace: -n before the context's", yaml(sc("a")), { flag: "flag", context: "ctx" }, ["flag/a"], []],
    ["no namespace: WATCH_NAMESPACE before the context's", yaml(sc("a")), { watch: "w", context: "ctx" }, ["w/a"], []],
    ["no namespace: -n before WATCH_NAMESPACE", yaml(sc("a")), { flag: "flag", watch: "w" }, ["flag/a"], []],
    ["no namespace, no context: default", yaml(sc("a")), {}, ["default/a"], []],
    ["its own namespace before the context's", yaml(sc("a", "own")), { context: "ctx" }, ["own/a"], []],
    ["its own namespace before WATCH_NAMESPACE", yaml(sc("a", "own")), { watch: "w" }, ["own/a"], []],
    ["its own namespace equal to -n", yaml(sc("a", "own")), { flag: "own" }, ["own/a"], []],
  ];
  for (const [name, text, rule, configs, ignored] of cases) {
    await t.step(name, () => assert.deepEqual(keys(text, rule), { configs, ignored }));
  }
});

Deno.test("readManifests names the file, the document and the reason of what it refuses", async (t) => {
  const cases: [string, string, NamespaceRule, RegExp][] = [
    ["not YAML", "a: [1", {}, /f\.yaml: document 1: /],
    ["a scalar", "---\nfoo\n", {}, /f\.yaml: document 1 is not an object/],
    ["no kind", JSON.stringify({ apiVersion: "v1" }), {}, /f\.yaml: document 1 has no kind$/],
    ["no apiVersion", yaml(sc("a", "x"), { kind: "ConfigMap" }), {}, /f\.yaml: document 2 has no apiVersion$/],
    ["a SyncConfig without a name", yaml({ ...sc("a", "x"), metadata: {} }), {}, /document 1 .*metadata\.name/],
    [
      "a namespace that contradicts -n",
      yaml(sc("a", "own")),
      { flag: "other" },
      /document 1 \(SyncConfig a\): its namespace own does not match the namespace other given with -n/,
    ],
    [
      "a bad List item",
      JSON.stringify({ apiVersion: "v1", kind: "List", items: [sc("a", "x"), 3] }),
      {},
      /f\.yaml: document 1, item 1 is not an object/,
    ],
  ];
  for (const [name, text, rule, message] of cases) {
    await t.step(name, () => assert.throws(() => readManifests(text, "f.yaml", rule), message));
  }
});

Deno.test("readManifests does not quote a YAML error's excerpt (it may be a Secret's value)", () => {
  assert.throws(() => readManifests("a: b\n  secret-value: [", "f.yaml", {}), (e: Error) => {
    assert.ok(!e.message.includes("secret-value"), e.message);
    return true;
  });
});

Deno.test("namespaceOf: -n, the object's own namespace, the context's, default", () => {
  assert.deepEqual(namespaceOf(undefined, {}), { namespace: "default" });
  assert.deepEqual(namespaceOf("", { context: "c" }), { namespace: "c" });
  assert.deepEqual(namespaceOf("o", { flag: "o", context: "c" }), { namespace: "o" });
  assert.ok("error" in namespaceOf("o", { flag: "n" }));
});

Deno.test("namespaceOfContext takes the current context's namespace, the first file that names it winning", () => {
  const cfg = (current: string | undefined, contexts: [string, string?][]) => ({
    "current-context": current,
    contexts: contexts.map(([name, namespace]) => ({ name, context: { cluster: "c", namespace } })),
  });
  assert.equal(namespaceOfContext([cfg("a", [["a", "team"], ["b", "other"]])]), "team");
  assert.equal(namespaceOfContext([cfg("a", [["a"]])]), undefined);
  assert.equal(namespaceOfContext([cfg(undefined, [["a", "x"]])]), undefined);
  assert.equal(namespaceOfContext([cfg("b", []), cfg("a", [["b", "second"]])]), "second");
  assert.equal(namespaceOfContext([cfg("b", [["b", "first"]]), cfg(undefined, [["b", "second"]])]), "first");
  assert.equal(namespaceOfContext([undefined, cfg("b", [["b", "x"]])]), "x");
});

Deno.test("isManifestName: *.yaml, *.yml, *.json, as kubectl apply -f <dir>", () => {
  const names = ["a.yaml", "b.yml", "c.json", "d.txt", "e.yaml.bak", "yaml", "f.YAML"];
  assert.deepEqual(names.filter(isManifestName), ["a.yaml", "b.yml", "c.json"]);
});

Deno.test("readSources: a directory's manifests in name order, subdirectories with -R, stdin once", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.mkdir(join(dir, "sub", "deeper"), { recursive: true });
    for (const f of ["b.yaml", "a.json", "notes.txt", "sub/c.yml", "sub/deeper/d.yaml"]) {
      await Deno.writeTextFile(join(dir, f), f);
    }
    const names = async (paths: string[], recursive: boolean) =>
      (await readSources(paths, recursive, () => Promise.resolve("from stdin"))).map((s) => `${s.name}=${s.text}`);
    assert.deepEqual(await names([dir], false), [`${dir}/a.json=a.json`, `${dir}/b.yaml=b.yaml`]);
    assert.deepEqual(await names([dir], true), [
      `${dir}/a.json=a.json`,
      `${dir}/b.yaml=b.yaml`,
      `${dir}/sub/c.yml=sub/c.yml`,
      `${dir}/sub/deeper/d.yaml=sub/deeper/d.yaml`,
    ]);
    // A file named on the command line is read whatever its name; stdin is `-`.
    assert.deepEqual(await names([join(dir, "notes.txt"), "-"], false), [
      `${dir}/notes.txt=notes.txt`,
      "stdin=from stdin",
    ]);
    await assert.rejects(() => names(["-", "-"], false), /standard input can be read only once/);
    await assert.rejects(() => names([join(dir, "missing.yaml")], false), /does not exist/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
