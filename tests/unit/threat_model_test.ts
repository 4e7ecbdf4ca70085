/**
 * docs/threat-model.md makes no claim without a test: every test file it names exists, and every test or step it names
 * by its title (`test "..."`, `step "..."`; a title cut with `...` is matched by what comes before) is a Deno.test or
 * t.step of the test files. A renamed or removed test fails here, so the promise cannot outlive its proof.
 */
import assert from "node:assert/strict";
import { join } from "node:path";

const root = new URL("../../", import.meta.url).pathname;
const page = await Deno.readTextFile(join(root, "docs", "threat-model.md"));

/** Every test and step title in tests/, as written between the quotes of its call. */
async function titles(): Promise<string> {
  const out: string[] = [];
  const walk = async (dir: string) => {
    for await (const e of Deno.readDir(dir)) {
      const path = join(dir, e.name);
      if (e.isDirectory) await walk(path);
      else if (e.name.endsWith(".ts")) out.push(await Deno.readTextFile(path));
    }
  };
  await walk(join(root, "tests"));
  // Titles are often split over lines with `+`: joined, so that a quoted title is found whole.
  return out.join("\n").replace(/"\s*\+\s*\n\s*"/g, "");
}

Deno.test("docs/threat-model.md names only test files that exist", async () => {
  // A path may be broken over two lines in the Markdown (`tests/integration/` and the file name).
  const text = page.replace(/`tests\/(\w+)\/\s*\n\s*(\w+\.ts)`/g, "`tests/$1/$2`");
  const paths = [...text.matchAll(/`(tests\/[\w/]+\.ts)`/g)].map((m) => m[1]);
  assert.ok(paths.length > 20, `found ${paths.length} paths`);
  for (const path of new Set(paths)) {
    assert.ok(await Deno.stat(join(root, path)).then(() => true, () => false), `${path} does not exist`);
  }
});

Deno.test("docs/threat-model.md names only tests and steps that exist", async () => {
  const all = await titles();
  const named = [...page.replace(/\s*\n\s*/g, " ").matchAll(/(?:test|step) "([^"]+)"/g)].map((m) => m[1]);
  assert.ok(named.length >= 10, `found ${named.length} titles`);
  for (const title of named) {
    const known = title.endsWith("...") ? title.slice(0, -3).trimEnd() : title;
    assert.ok(all.includes(known), `no test or step is titled "${title}"`);
  }
});
