/**
 * docs/reference.md against the code, read from the sources (no server, no process): the Event reasons espejo
 * records, the loggers it logs to and the levels it logs at, its flags and its metric families. Each is documented
 * and each documented one exists; the reference had listed 3 of 5 Event reasons and 8 of 13 loggers. And the memory
 * figures that docs/migration.md and docs/performance.md quote are those of the latest measurement inside the limits,
 * bench/results/scale.md: the two pages had given 101 and 87 MiB for the same 5000 namespaces. tests/integration/
 * main_test.ts checks the same tables against a running controller (`--help`, `/metrics`).
 */
import assert from "node:assert/strict";
import { join, relative } from "node:path";
import { repoRoot } from "../../testenv/build.ts";
import { readCommandLine } from "../../lib/app/config.ts";

const read = (...path: string[]) => Deno.readTextFileSync(join(repoRoot, ...path));

/** The controller's sources: lib/ and main.ts (the test helpers and benchmarks log nothing a user sees). */
function sources(): { path: string; text: string }[] {
  const out: { path: string; text: string }[] = [{ path: "main.ts", text: read("main.ts") }];
  const walk = (dir: string) => {
    for (const e of Deno.readDirSync(dir)) {
      const path = join(dir, e.name);
      if (e.isDirectory) walk(path);
      else if (e.name.endsWith(".ts")) out.push({ path: relative(repoRoot, path), text: Deno.readTextFileSync(path) });
    }
  };
  walk(join(repoRoot, "lib"));
  return out;
}

/** A `## ` section of a page, up to the next one. */
function section(page: string, heading: string): string {
  const start = page.indexOf(`\n## ${heading}\n`);
  assert.ok(start >= 0, `a section "${heading}"`);
  const end = page.indexOf("\n## ", start + 1);
  return page.slice(start, end < 0 ? undefined : end);
}

const sorted = <T>(xs: Iterable<T>) => [...new Set(xs)].sort();
const reference = read("docs", "reference.md");

// An EventRecorder's emit(target, type, reason, message); the target may be a call such as refOf(sc).
const EMIT = /\.emit\(\s*(?:[^,()]|\([^()]*\))+,\s*"(Normal|Warning)",\s*/g;

Deno.test("docs/reference.md lists every Event reason espejo records, with its type, and no other", () => {
  const emitted: string[] = [];
  for (const { path, text } of sources()) {
    for (const m of text.matchAll(EMIT)) {
      const reason = /^"([A-Za-z]+)"/.exec(text.slice(m.index! + m[0].length));
      assert.ok(reason, `${path}: an Event whose reason is not a literal, which this test cannot read`);
      emitted.push(`${m[1]} ${reason[1]}`);
    }
  }
  assert.ok(emitted.length >= 5, `the Events were found: ${emitted}`);
  const documented = [...section(reference, "Events").matchAll(/^\| (Normal|Warning) +\| `([A-Za-z]+)` +\|/gm)]
    .map((m) => `${m[1]} ${m[2]}`);
  assert.deepEqual(sorted(documented), sorted(emitted));
  assert.equal(documented.length, new Set(documented).size, "each reason once");
});

/** LogTape's method names by the level they log at (`warn` logs `warning`). */
const LEVELS: Record<string, string> = {
  trace: "trace",
  debug: "debug",
  info: "info",
  warn: "warning",
  warning: "warning",
  error: "error",
  fatal: "fatal",
};

/** The logger categories and levels the code uses: `const x = getLogger([...])`, then `x.level(` or x.level`...`. */
function logging(): { loggers: string[]; levels: string[] } {
  const loggers: string[] = [];
  const levels: string[] = [];
  for (const { path, text } of sources()) {
    for (const m of text.matchAll(/getLogger\(([^)]*)\)/g)) {
      const category = /^\[\s*((?:"[a-z]+"\s*,?\s*)+)\]$/.exec(m[1].trim());
      assert.ok(category, `${path}: getLogger(${m[1]}) is not a literal category, which this test cannot read`);
      loggers.push([...category[1].matchAll(/"([a-z]+)"/g)].map((c) => c[1]).join("."));
      const binding = new RegExp(`(?:const|let)\\s+(\\w+)\\s*=\\s*getLogger\\(${escape(m[1])}\\)`).exec(text);
      assert.ok(binding, `${path}: getLogger's logger is kept in a variable`);
      for (const call of text.matchAll(new RegExp(`\\b${binding[1]}\\.(\\w+)\\s*[(\`]`, "g"))) {
        assert.ok(call[1] in LEVELS, `${path}: ${binding[1]}.${call[1]} is not a level`);
        levels.push(LEVELS[call[1]]);
      }
    }
    // Loggers configured rather than used: the logging library's own.
    if (path === join("lib", "app", "logging.ts")) {
      for (const m of text.matchAll(/category: \[((?:"[a-z]+"(?:, )?)+)\]/g)) {
        const category = [...m[1].matchAll(/"([a-z]+)"/g)].map((c) => c[1]);
        if (category[0] !== "espejo") loggers.push(category.join("."));
      }
    }
  }
  return { loggers: sorted(loggers), levels: sorted(levels) };
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

Deno.test("docs/reference.md lists every logger espejo logs to, and no other", () => {
  const { loggers } = logging();
  assert.ok(loggers.includes("espejo.controller") && loggers.includes("logtape.meta"), `${loggers}`);
  const documented = [...section(reference, "Logs").matchAll(/^\| `((?:espejo|logtape)\.[a-z.]+)` +\|/gm)]
    .map((m) => m[1]);
  assert.deepEqual(sorted(documented), loggers);
});

Deno.test("docs/reference.md names every level espejo logs at, and no other", () => {
  const { levels } = logging();
  const logs = section(reference, "Logs");
  const field = /`level` \(((?:`[a-z]+`(?:, )?)+)\)/.exec(logs);
  assert.ok(field, "the JSON field `level` lists its values");
  assert.deepEqual(sorted([...field[1].matchAll(/`([a-z]+)`/g)].map((m) => m[1])), levels);
  const paragraph = /^Levels: [\s\S]*?\n\n/m.exec(logs);
  assert.ok(paragraph, "a paragraph on the levels");
  assert.deepEqual(sorted([...paragraph[0].matchAll(/\*\*([a-z]+)\*\*/g)].map((m) => m[1])), levels);
});

Deno.test("docs/reference.md's flag table holds every flag of --help, and no other", () => {
  const help = readCommandLine(["--help"], {});
  assert.ok("print" in help);
  const flags = sorted([...help.print.matchAll(/(?:^|\s)(--[a-z][a-z-]+)/g)].map((m) => m[1]));
  const table = section(reference, "Flags and environment");
  const documented = sorted(
    [...table.matchAll(/^\| (`-.*?) +\|/gm)].flatMap((m) => [...m[1].matchAll(/--[a-z][a-z-]+/g)].map((f) => f[0])),
  );
  assert.deepEqual(documented, flags);
});

Deno.test("docs/reference.md documents every metric family espejo declares, and no other", () => {
  const declared: string[] = [];
  for (const { path, text } of sources()) {
    if (!path.startsWith(join("lib", "metrics"))) continue;
    for (const m of text.matchAll(/\bname: "([a-z_]+)"/g)) declared.push(m[1]);
    for (const m of text.matchAll(/"((?:process|nodejs)_[a-z_]+)"/g)) declared.push(m[1]);
  }
  assert.ok(declared.length >= 40, `the metric declarations were found: ${declared.length}`);
  const metrics = section(reference, "Metrics");
  const inTables = [...metrics.matchAll(/^\| `([a-z_]+)[{`]/gm)].map((m) => m[1]);
  const inProse = [...metrics.matchAll(/`((?:process|nodejs)_[a-z_]+)`/g)].map((m) => m[1]);
  assert.deepEqual(sorted([...inTables, ...inProse]), sorted(declared));
});

// ---- memory figures ------------------------------------------------------------------------------------------------

interface Measured {
  objects: number;
  convergence: number;
  restart: number;
  resident: number;
  anonymous: number;
  heap: number;
  code: number;
}

/** A scale run's memory figures by N (bench/results/`name`): its "Memory against N" table and the code of (f). */
function scale(name = "scale.md", sizes = [100, 1000, 2500, 5000]): Map<number, Measured> {
  const page = read("bench", "results", name);
  const codeRow = /^\| \(f\) of which anonymous \(heap, allocator\) \/ executable code[^|]*\|[^|]*\|(.*)\|$/m.exec(
    page,
  );
  assert.ok(codeRow, `${name}'s row (f) of anonymous memory and code`);
  const code = codeRow[1].split("|").map((c) => Number(/\/ (\d+) MiB/.exec(c)?.[1]));
  const out = new Map<number, Measured>();
  const rows = page.matchAll(
    /^\| (\d+) \| (\d+) \| \d+ \| (\d+) MiB \/ (\d+) MiB \| (\d+) MiB \/ (\d+) MiB \/ (\d+) MiB \|/gm,
  );
  for (const [, n, objects, convergence, restart, resident, anonymous, heap] of rows) {
    out.set(Number(n), {
      objects: Number(objects),
      convergence: Number(convergence),
      restart: Number(restart),
      resident: Number(resident),
      anonymous: Number(anonymous),
      heap: Number(heap),
      code: code[out.size],
    });
  }
  assert.deepEqual([...out.keys()], sizes, `${name} measures ${sizes.join(", ")} namespaces`);
  return out;
}

Deno.test("docs/migration.md's sizing quotes bench/results/scale.md: each figure for the N it names", () => {
  const measured = scale();
  const page = read("docs", "migration.md");
  const start = page.indexOf("**Resources.**");
  assert.ok(start >= 0, "a step on resources");
  const step = page.slice(start, page.indexOf("\n\n", start)).replace(/\s+/g, " ");
  const parts = [...step.matchAll(/\bat (\d+), (?=\d+ MiB)/g)];
  assert.deepEqual(parts.map((m) => Number(m[1])), [1000, 5000], `the sizes the step names: ${step}`);
  for (const [i, m] of parts.entries()) {
    const n = Number(m[1]);
    const text = step.slice(m.index, parts[i + 1]?.index);
    const figures = [...text.matchAll(/(\d+(?:\.\d+)?) MiB/g)].map((f) => Number(f[1]));
    const { resident, convergence, restart, code } = measured.get(n)!;
    assert.ok(figures.includes(resident), `at ${n}: ${resident} MiB resident at rest, as measured: ${text}`);
    assert.ok(figures.includes(restart), `at ${n}: ${restart} MiB during a restart, as measured: ${text}`);
    for (const f of figures) {
      // The 64 MiB goal is the only other figure the step may name.
      assert.ok([resident, convergence, restart, code, 64].includes(f), `at ${n}: ${f} MiB is not measured: ${text}`);
    }
  }
  const objects = [...measured.values()].map((m) => m.objects.toLocaleString("en-US"));
  assert.ok(step.includes(`${objects[0]} to ${objects.at(-1)} objects`), `the objects measured: ${objects}`);
});

/** A row of docs/performance.md's first table after `heading`, by its measure: the cells after the target. */
function performanceRow(heading: string): (measure: string) => string[] {
  const page = read("docs", "performance.md");
  const table = page.slice(page.indexOf(heading));
  return (measure) => {
    const m = new RegExp(`^\\| ${escape(measure)} +\\|[^|]*\\|(.*)\\|$`, "m").exec(table);
    assert.ok(m, `performance.md's row "${measure}"`);
    return m[1].split("|").map((c) => c.trim());
  };
}

Deno.test("docs/performance.md's table inside the limits quotes bench/results/scale.md", () => {
  const measured = scale();
  const row = performanceRow("## Inside the Go espejo's limits");
  const ns = [...measured.keys()];
  const rest = row("resident at rest (anonymous / executable code)");
  const restart = row("peak anonymous memory: restart (every object read again, synced)");
  const convergence = row("peak anonymous memory: convergence of 5, then a 6th SyncConfig");
  for (const [i, n] of ns.entries()) {
    const m = measured.get(n)!;
    assert.match(rest[i], new RegExp(`^${m.resident} MiB \\(${m.anonymous} / ${m.code}\\)`), `at rest, N=${n}`);
    // scale.md rounds to whole MiB; performance.md may give a tenth more.
    assert.equal(Math.round(Number(/^([\d.]+) MiB/.exec(restart[i])?.[1])), m.restart, `restart, N=${n}`);
    assert.equal(Number(/^([\d.]+) MiB/.exec(convergence[i])?.[1]), m.convergence, `convergence, N=${n}`);
  }
});

Deno.test("docs/performance.md's table of 200,000 objects quotes bench/results/scale-n10000.md", () => {
  const measured = scale("scale-n10000.md", [100, 10000]);
  const row = performanceRow("### 200,000 objects");
  const peaks = row("peak anonymous: convergence / restart / full-compare pass");
  const rest = row("at rest: anonymous / V8 heap used / resident");
  for (const [i, [n, m]] of [...measured].entries()) {
    assert.match(peaks[i], new RegExp(`^${m.convergence} / ${m.restart} / \\d+ MiB`), `peaks, N=${n}`);
    assert.match(rest[i], new RegExp(`^${m.anonymous} / ${m.heap} / ${m.resident} MiB`), `at rest, N=${n}`);
  }
});
