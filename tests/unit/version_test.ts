/** One version string: the binary's, the image deploy/ pins, the README's install line and the release workflow's. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { parse } from "yaml";
import { repoRoot } from "../../testenv/build.ts";
import { VERSION } from "../../lib/app/version.ts";

const read = (...path: string[]) => Deno.readTextFileSync(join(repoRoot, ...path));

Deno.test("VERSION is a release version (semver without a build suffix)", () => {
  assert.match(VERSION, /^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/);
});

Deno.test("deploy/ pins the image of VERSION, and the Deployment names the image it pins", () => {
  const kustomization = parse(read("deploy", "kustomization.yaml"));
  assert.deepEqual(kustomization.images, [{ name: "ghcr.io/appuio/espejo-deno", newTag: `v${VERSION}` }]);
  assert.match(read("deploy", "deployment.yaml"), /^\s+image: ghcr\.io\/appuio\/espejo-deno$/m);
});

Deno.test("the README installs VERSION and the release workflow publishes the tag that equals it", () => {
  assert.ok(read("README.md").includes(`ghcr.io/appuio/espejo-deno:v${VERSION}`), "README names the image of VERSION");
  const workflow = parse(read(".github", "workflows", "release.yml"));
  assert.deepEqual(workflow.on.push.tags, ["v*"]);
  const stepsOf = (job: string): { run?: string }[] => workflow.jobs[job].steps;
  const check = stepsOf("binaries").find((s) => s.run?.includes("lib/app/version.ts"));
  assert.ok(check?.run?.includes('test "${GITHUB_REF_NAME}" = "v${version}"'), "a tag that is not v<VERSION> fails");
  // The workflow's sed reads the line as this test's import does.
  const line = read("lib", "app", "version.ts").split("\n").find((l) => l.startsWith("export const VERSION"));
  assert.equal(line, `export const VERSION = "${VERSION}";`);
  // The image job needs the checked binaries; the release of the binaries needs the pushed image.
  assert.equal(workflow.jobs.image.needs, "binaries");
  assert.deepEqual(workflow.jobs.release.needs, ["binaries", "image"]);
  const steps = stepsOf("image");
  assert.ok(steps.some((s) => s.run?.includes("kubectl apply -k deploy/")), "deploy/ is smoke-tested before push");
  const push = steps.findIndex((s) => s.run?.includes("docker push"));
  const smoke = steps.findIndex((s) => s.run?.includes("kubectl apply -k deploy/"));
  assert.ok(push > smoke, "the image is published only after the smoke test");
});

Deno.test("every alert's runbook_url is a section of docs/runbooks.md at this version's tag", () => {
  const rules = parse(read("deploy", "monitoring", "espejo.rules.yaml"));
  const headings = new Set(
    [...read("docs", "runbooks.md").matchAll(/^## (\S+)$/gm)].map((m) => m[1].toLowerCase()),
  );
  const alerts: { alert: string; annotations: Record<string, string> }[] = rules.groups.flatMap((g: {
    rules: unknown[];
  }) => g.rules);
  assert.ok(alerts.length >= 9);
  for (const { alert, annotations } of alerts) {
    assert.equal(annotations.runbook, undefined, `${alert}: runbook_url, the name Alertmanager templates read`);
    assert.equal(
      annotations.runbook_url,
      `https://github.com/appuio/espejo-deno/blob/v${VERSION}/docs/runbooks.md#${alert.toLowerCase()}`,
    );
    assert.ok(headings.has(alert.toLowerCase()), `docs/runbooks.md has a section ${alert}`);
  }
});
