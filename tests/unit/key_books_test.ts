/**
 * One lifecycle for per-key state (lib/controller/key_books.ts): every book the controller registers forgets a
 * namespace or a SyncConfig that goes, in one call, and keeps what belongs to other keys.
 */
import assert from "node:assert/strict";
import { Freshness } from "../../lib/controller/freshness.ts";
import { type ControllerBooks, KeyBooks, registerBooks } from "../../lib/controller/key_books.ts";
import { StatusLedger } from "../../lib/controller/status_ledger.ts";
import { type StatusDeps, StatusWriter } from "../../lib/controller/status_writer.ts";
import { Metrics } from "../../lib/metrics/metrics.ts";

Deno.test("KeyBooks: a namespace or SyncConfig that goes is one call every book hears; a name registers once", () => {
  const heard: string[] = [];
  const books = new KeyBooks();
  books.register("a", { namespace: (n) => heard.push(`a ns ${n}`), config: (k) => heard.push(`a cfg ${k}`) });
  books.register("b", { config: (k) => heard.push(`b cfg ${k}`) });
  books.namespaceGone("team-a");
  books.configGone("espejo/x");
  assert.deepEqual(heard, ["a ns team-a", "a cfg espejo/x", "b cfg espejo/x"]);
  assert.throws(() => books.register("a", {}), /registered twice/);
});

/** The controller's books as recording fakes: which part was told to forget what. */
function recordingParts() {
  const told: string[] = [];
  const tell = (what: string) => (key: string) => void told.push(`${what} ${key}`);
  const parts: ControllerBooks = {
    freshness: { forget: tell("freshness") },
    selection: { forgetNamespace: tell("selection") },
    ledger: { forgetNamespace: (ns) => (told.push(`ledger ${ns}`), []), drop: tell("ledger") },
    statusWriter: {
      heard: (f) => {
        if (f.kind === "changed") tell("status changed")(f.cfgKey);
        else if (f.kind === "finished") tell("status writer")(f.namespace);
        else tell("unexpected")(f.kind);
      },
      forgetConfig: tell("status writer"),
    },
    syncEvents: { forget: tell("sync events") },
    events: { forget: tell("held Events") },
    configs: { forgetConfig: tell("templated deleteItems warnings") },
    queue: { forget: tell("work retries") },
    executor: { forgetNamespace: tell("item retries"), forgetConfig: tell("item retries and server adds") },
    view: { forgetConfig: tell("rights") },
    large: { forget: tell("turns at large objects") },
    caches: { forgetNamespace: tell("created index") },
    metrics: new Metrics(),
  };
  return { parts, told };
}

Deno.test("registerBooks: every book of the controller hears a deleted namespace and a deleted SyncConfig", () => {
  const { parts, told } = recordingParts();
  const books = new KeyBooks();
  registerBooks(books, parts);
  books.namespaceGone("gone");
  assert.deepEqual(told.splice(0).sort(), [
    "created index gone",
    "freshness gone",
    "item retries gone",
    "ledger gone",
    "selection gone",
    "status writer gone",
    "turns at large objects gone",
    "work retries ns/gone",
  ]);
  books.configGone("espejo/gone");
  assert.deepEqual(told.sort(), [
    "held Events espejo/gone",
    "item retries and server adds espejo/gone",
    "ledger espejo/gone",
    "rights espejo/gone",
    "status writer espejo/gone",
    "sync events espejo/gone",
    "templated deleteItems warnings espejo/gone",
    "work retries cfg/espejo/gone",
    "work retries prune/espejo/gone",
    "work retries status/espejo/gone",
  ]);
});

Deno.test("registerBooks: the real books hold nothing of a deleted key afterwards, and keep the others", () => {
  const freshness = new Freshness(600_000);
  const ledger = new StatusLedger();
  // Never run: only its bookkeeping is used.
  const statusWriter = new StatusWriter({} as StatusDeps);
  const metrics = new Metrics();
  const { parts } = recordingParts();
  const books = new KeyBooks();
  registerBooks(books, { ...parts, freshness, ledger, statusWriter, metrics });
  const outcome = { synced: 1, deleted: 0, failed: 0, errors: [] };
  for (const ns of ["gone", "kept"]) {
    freshness.synced(ns, freshness.begin(), true, Date.now());
    for (const cfg of ["espejo/gone", "espejo/kept"]) {
      ledger.track(cfg);
      ledger.record(cfg, ns, outcome);
      statusWriter.heard({ kind: "queued", cfgKeys: [cfg], namespace: ns });
    }
  }
  for (const cfg of ["espejo/gone", "espejo/kept"]) metrics.invalid.set({ syncconfig: cfg }, 0);
  books.namespaceGone("gone");
  books.configGone("espejo/gone");
  assert.equal(freshness.isFresh("gone", Date.now()), false);
  assert.equal(freshness.isFresh("kept", Date.now()), true);
  assert.equal(ledger.counts("gone"), false);
  assert.deepEqual([...ledger.outcomes("espejo/gone")], []);
  assert.deepEqual([...ledger.outcomes("espejo/kept")], [outcome], "kept only where it still counts");
  assert.equal(statusWriter.pendingOf("espejo/gone"), 0);
  assert.equal(statusWriter.pendingOf("espejo/kept"), 1, "its unit of the kept namespace is still pending");
  const gauges = metrics.registry.values("espejo_syncconfig_invalid").map((v) => v.labels.syncconfig);
  assert.deepEqual(gauges, ["espejo/kept"]);
});

/** Every `.ts` file under `dir` (a URL ending in `/`), with its text. */
async function* sources(dir: URL): AsyncGenerator<[URL, string]> {
  for await (const entry of Deno.readDir(dir)) {
    const url = new URL(entry.name + (entry.isDirectory ? "/" : ""), dir);
    if (entry.isDirectory) yield* sources(url);
    else if (entry.name.endsWith(".ts")) yield [url, await Deno.readTextFile(url)];
  }
}

Deno.test("registerBooks: every class in lib/ that forgets a namespace or SyncConfig is registered, or held by one that is", async () => {
  const lib = new URL("../../lib/", import.meta.url);
  /** Books inside a registered part: its forget calls theirs. */
  const heldBy: Record<string, string> = {
    ItemBooks: "sync/executor.ts",
    RetryBook: "sync/item_books.ts",
    ServerAdds: "sync/item_books.ts",
    StatusSchedule: "controller/status_writer.ts",
    CreatedIndex: "sync/resource_caches.ts",
    SelectionIndex: "model/registry.ts",
    // Made beside the DelegatedView that holds it, so that tests can hand that one a fake.
    Rights: "controller/parts.ts",
  };
  /** Registered by shape (they import key_books.ts, which must not import them back): the field that takes them. */
  const byShape: Record<string, string> = { ConfigChanges: "configs" };
  /** Forgets one object of a cache, not a key. */
  const perObject = new Set(["Reflector"]);
  const registered = await Deno.readTextFile(new URL("controller/key_books.ts", lib));
  const found: string[] = [];
  for await (const [, text] of sources(lib)) {
    for (const part of text.split(/^export class /m).slice(1)) {
      const name = part.match(/^\w+/)![0];
      if (!/^\s+(forget|forgetConfig|forgetNamespace)\(/m.test(part) || perObject.has(name)) continue;
      found.push(name);
      const holder = heldBy[name];
      if (holder) {
        const held = await Deno.readTextFile(new URL(holder, lib));
        assert.ok(held.includes(`new ${name}`), `${name} is said to be held by ${holder}, which makes none`);
      } else if (byShape[name]) {
        const field = byShape[name];
        assert.match(
          registered,
          new RegExp(`^  ${field}: \\{ forget`, "m"),
          `ControllerBooks has no ${field} for ${name}`,
        );
        const parts = await Deno.readTextFile(new URL("controller/parts.ts", lib));
        assert.match(parts, new RegExp(`const ${field} = new ${name}\\b`), `parts.ts passes no ${name} as ${field}`);
      } else {
        assert.match(registered, new RegExp(`Pick<${name}[<,]`), `${name} forgets keys but is not in ControllerBooks`);
      }
    }
  }
  assert.ok(found.includes("Executor") && found.includes("ConfigChanges"), `the scan finds the books: ${found}`);
});
