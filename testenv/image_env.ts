/**
 * The environment the image gives the controller (the Dockerfile's ENV lines: glibc allocator settings): the bench
 * and the process tests run main.ts with it, so what they measure is what ships.
 */
import { join } from "node:path";
import { repoRoot } from "./build.ts";

export function imageEnvironment(): Record<string, string> {
  // The compiled binary never looks for a newer Deno; `deno run` would, in the background, at some memory cost.
  const env: Record<string, string> = { DENO_NO_UPDATE_CHECK: "1" };
  for (const line of Deno.readTextFileSync(join(repoRoot, "Dockerfile")).split("\n")) {
    const m = /^ENV\s+(.+)$/.exec(line.trim());
    if (!m) continue;
    for (const pair of m[1].split(/\s+/)) {
      const eq = pair.indexOf("=");
      if (eq > 0) env[pair.slice(0, eq)] = pair.slice(eq + 1);
    }
  }
  return env;
}
