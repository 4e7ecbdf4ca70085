/**
 * The permission flags the shipped binary is compiled with (deno.permissions, read by the Dockerfile too): tests
 * that run main.ts as a process use exactly these, so a permission the code needs but the image lacks fails here.
 */
import { join } from "node:path";
import { repoRoot } from "./build.ts";

export function espejoPermissions(): string[] {
  return Deno.readTextFileSync(join(repoRoot, "deno.permissions")).split("\n").map((l) => l.trim()).filter(Boolean);
}
