/**
 * The GitHub Actions workflows (.github/workflows/) cannot run here (no Docker, no GitHub), so they are checked by
 * actionlint, built from its Go module (testenv/actionlint.ts): syntax, expressions, job outputs and needs, the
 * inputs of the actions they use, permissions. Shell scripts inside them are not passed to shellcheck (the
 * development machines have none; `-shellcheck=` keeps the result the same everywhere). No API server is needed;
 * this lives under tests/integration/ because it builds a Go tool, which `deno task test:unit` never does.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { repoRoot } from "../../testenv/build.ts";
import { ensureActionlint } from "../../testenv/actionlint.ts";

const workflowsDir = join(repoRoot, ".github", "workflows");

async function actionlint(files: string[]): Promise<{ code: number; out: string }> {
  const out = await new Deno.Command(await ensureActionlint(), {
    args: ["-no-color", "-shellcheck=", "-pyflakes=", ...files],
    cwd: repoRoot,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, out: dec.decode(out.stdout) + dec.decode(out.stderr) };
}

Deno.test("actionlint finds no error in .github/workflows/*.yml", async () => {
  const files = [...Deno.readDirSync(workflowsDir)]
    .filter((e) => e.isFile && /\.ya?ml$/.test(e.name))
    .map((e) => join(".github", "workflows", e.name))
    .sort();
  assert.deepEqual(files, [".github/workflows/release.yml", ".github/workflows/test.yml"]);
  const run = await actionlint(files);
  assert.equal(run.code, 0, run.out);
});

Deno.test("actionlint fails a workflow with an error (the check above can fail)", async () => {
  const dir = await Deno.makeTempDir({ prefix: "espejo-workflow-" });
  try {
    const broken = join(dir, "broken.yml");
    // An output of a job that `needs` does not list, and an input actions/checkout does not have.
    await Deno.writeTextFile(
      broken,
      [
        "on: push",
        "jobs:",
        "  a:",
        "    runs-on: ubuntu-24.04",
        "    steps:",
        "      - uses: actions/checkout@v4",
        "        with: { no-such-input: true }",
        "      - run: echo ${{ needs.b.outputs.version }}",
        "",
      ].join("\n"),
    );
    const run = await actionlint([broken]);
    assert.equal(run.code, 1, run.out);
    assert.match(run.out, /no-such-input/);
    assert.match(run.out, /needs\.b|"b"/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
