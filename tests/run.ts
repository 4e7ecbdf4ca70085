/**
 * `deno task test`: starts one control plane (building its binaries if needed), runs every test file against it,
 * stops it, and ends with a line `N passed, N failed`.
 */
import { join } from "node:path";
import { ensurePrometheusTools } from "../testenv/prometheus_tools.ts";
import { ControlPlane } from "../testenv/controlplane.ts";
import { installBase } from "../testenv/shared.ts";

const extra = Deno.args;
// Built (or found in the cache) before the tests start, so that a cold build shows its progress here.
await ensurePrometheusTools();
const cp = await ControlPlane.start({ audit: true });
let code = 1;
try {
  await installBase(cp.client());
  const caFile = join(cp.dir, "ca-for-tests.crt");
  await Deno.writeTextFile(caFile, cp.caPem);
  const child = new Deno.Command(Deno.execPath(), {
    args: ["test", "--allow-all", "--parallel", ...(extra.length ? extra : ["tests/"])],
    env: {
      TESTENV_SERVER: cp.server,
      TESTENV_CA_FILE: caFile,
      TESTENV_ADMIN_TOKEN: cp.admin.token,
      TESTENV_AUDIT_LOG: cp.auditLogPath,
      TESTENV_DIR: cp.dir,
    },
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  // Echo the runner's output while counting its summary line.
  let passed = 0;
  let failed = 0;
  let tail = "";
  const decoder = new TextDecoder();
  for await (const chunk of child.stdout) {
    const text = decoder.decode(chunk, { stream: true });
    await Deno.stdout.write(chunk);
    tail = (tail + text).slice(-4000);
  }
  const status = await child.status;
  // deno test prints e.g. "ok | 42 passed (3 steps) | 0 failed (12s)" or "FAILED | 40 passed | 2 failed".
  // deno-lint-ignore no-control-regex -- strips the runner's ANSI colours
  const m = /(\d+) passed[^|]*\| (\d+) failed/.exec(tail.replace(/\x1b\[[0-9;]*m/g, ""));
  if (m) {
    passed = Number(m[1]);
    failed = Number(m[2]);
  } else if (!status.success) {
    failed = 1;
  }
  console.log(`${passed} passed, ${failed} failed`);
  code = status.success && failed === 0 && passed > 0 ? 0 : 1;
} finally {
  await cp.stop();
}
Deno.exit(code);
