/** `deno task demo` runs start to finish, exits 0 and leaves no process behind. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { repoRoot } from "../../testenv/build.ts";

Deno.test("deno task demo exits 0, shows the result table and leaves no process behind", {
  sanitizeOps: false,
  sanitizeResources: false,
}, async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", join(repoRoot, "demo/demo.ts")],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  assert.equal(out.code, 0, text.slice(-3000));
  assert.match(text, /ConfigMap tenant-info\s+✓\s+–\s+✓/);
  assert.match(text, /wrote nothing: ✓ empty/);
  assert.match(text, /legacy-tenant-info deleted from shop/);
  const dir = /control plane ready at \S+ \((\S+)\)/.exec(text)?.[1];
  assert.ok(dir, "the demo names its control plane directory");
  const ps = new TextDecoder().decode(
    (await new Deno.Command("ps", { args: ["-eo", "args"], stdout: "piped" }).output()).stdout,
  );
  assert.equal(ps.split("\n").filter((l) => l.includes(dir!)).length, 0, "no etcd or kube-apiserver left running");
});
