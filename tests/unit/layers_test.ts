/**
 * The layout is the architecture (docs/how-it-works.md, Layers): imports in lib/ flow one way, and the planner decides without
 * I/O. Read from the source, so a new import that breaks the layering fails here, naming the file and the import.
 */
import assert from "node:assert/strict";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const lib = resolve(dirname(fileURLToPath(import.meta.url)), "../../lib");
/**
 * A layer may import its own and lower ones. Siblings import neither each other: metrics and sync; controller and
 * plan (what both need lives below them).
 */
const RANK: Record<string, number> = { kube: 0, model: 1, sync: 2, metrics: 2, controller: 3, plan: 3, app: 4 };

function* files(dir: string): Generator<string> {
  for (const e of Deno.readDirSync(dir)) {
    const p = join(dir, e.name);
    if (e.isDirectory) yield* files(p);
    else if (p.endsWith(".ts")) yield p;
  }
}

function importsOf(file: string): string[] {
  const text = Deno.readTextFileSync(file);
  return [...text.matchAll(/(?:from|import)\s*\(?\s*"(\.{1,2}\/[^"]+)"/g)].map((m) => resolve(dirname(file), m[1]));
}

const layerOf = (file: string): string => relative(lib, file).split("/")[0];

Deno.test("layers: every file of lib/ is in a layer", () => {
  const loose = [...files(lib)].filter((f) => !(layerOf(f) in RANK)).map((f) => relative(lib, f));
  assert.deepEqual(loose, []);
});

Deno.test("layers: imports flow down (kube <- model <- sync, metrics <- controller, plan <- app)", () => {
  const wrong: string[] = [];
  for (const f of files(lib)) {
    const from = layerOf(f);
    for (const target of importsOf(f)) {
      const to = layerOf(target);
      const sibling = from !== to && RANK[from] === RANK[to];
      if (RANK[to] > RANK[from] || sibling) wrong.push(`${relative(lib, f)} imports ${relative(lib, target)}`);
    }
  }
  assert.deepEqual(wrong, []);
});

Deno.test("layers: the planner imports no client, no cache class and no timer", () => {
  const planner = join(lib, "sync/planner.ts");
  const text = Deno.readTextFileSync(planner);
  const imported = importsOf(planner).map((f) => relative(lib, f));
  for (const banned of ["kube/client.ts", "kube/reflector.ts", "sync/resource_caches.ts", "sync/applier.ts"]) {
    assert.ok(!imported.includes(banned), `planner.ts imports ${banned}`);
  }
  assert.doesNotMatch(text, /\b(setTimeout|setInterval|Date\.now|performance\.now|fetch)\(/);
});

Deno.test("fast tests: tests/unit/ imports no control plane, no Prometheus tools and no integration harness", () => {
  const unit = resolve(lib, "../tests/unit");
  const root = resolve(lib, "..");
  const slow = [
    "testenv/shared.ts",
    "testenv/controlplane.ts",
    "testenv/prometheus_tools.ts",
    "testenv/actionlint.ts",
    "testenv/harness.ts",
    "tests/integration/",
  ];
  const wrong: string[] = [];
  for (const f of files(unit)) {
    for (const target of importsOf(f)) {
      const rel = relative(root, target);
      if (slow.some((s) => rel.startsWith(s))) wrong.push(`${relative(root, f)} imports ${rel}`);
    }
  }
  assert.deepEqual(
    wrong,
    [],
    "deno task test:unit runs tests/unit/ without a server: move such a test to tests/integration/",
  );
});

Deno.test("bench/ imports nothing from tests/: what bench and tests share lives in testenv/", () => {
  const root = resolve(lib, "..");
  const wrong: string[] = [];
  for (const f of files(join(root, "bench"))) {
    for (const target of importsOf(f)) {
      const rel = relative(root, target);
      if (rel.startsWith("tests/")) wrong.push(`${relative(root, f)} imports ${rel}`);
    }
  }
  assert.deepEqual(wrong, []);
});

/** The import cycles of lib/ (type imports too): each a list of files that import one another round. */
function importCycles(): string[][] {
  const graph = new Map<string, string[]>();
  for (const f of files(lib)) graph.set(relative(lib, f), importsOf(f).map((t) => relative(lib, t)));
  // Tarjan's strongly connected components: a component of more than one file, or a file importing itself, is a cycle.
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || graph.get(v)!.includes(v)) cycles.push(component.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return cycles;
}

Deno.test("layers: no import cycle in lib/, type imports included (a reader can start at the bottom)", () => {
  assert.deepEqual(importCycles(), []);
});

Deno.test("layers: no hand-written file in lib/ is over 300 lines (generated ones say so and are left out)", () => {
  const long = [...files(lib)].filter((f) => {
    const text = Deno.readTextFileSync(f);
    return !text.slice(0, 300).includes("Do not edit") && text.split("\n").length - 1 > 300;
  }).map((f) => `${relative(lib, f)}: ${Deno.readTextFileSync(f).split("\n").length - 1} lines`);
  assert.deepEqual(long, []);
});
