/**
 * The memory limit of the process's cgroup, as a container runtime sets it from `resources.limits.memory`: cgroup v2
 * (`memory.max`) or v1 (`memory.limit_in_bytes`), at the path /proc/self/cgroup names (usually `/` in a container).
 * Undefined when there is no limit ("max", or v1's huge "unlimited" value) or no cgroup file can be read.
 */
const UNLIMITED_V1 = 2 ** 60;

export function parseCgroupPaths(procSelfCgroup: string): { v2?: string; memoryV1?: string } {
  const out: { v2?: string; memoryV1?: string } = {};
  for (const line of procSelfCgroup.split("\n")) {
    const [id, controllers, path] = line.split(":");
    if (path === undefined) continue;
    if (id === "0" && controllers === "") out.v2 = path;
    else if (controllers.split(",").includes("memory")) out.memoryV1 = path;
  }
  return out;
}

export function parseLimit(text: string): number | undefined {
  const value = text.trim();
  if (value === "max") return undefined;
  const n = Number(value);
  return Number.isFinite(n) && n > 0 && n < UNLIMITED_V1 ? n : undefined;
}

function read(path: string): string | undefined {
  try {
    return Deno.readTextFileSync(path);
  } catch {
    return undefined;
  }
}

export function cgroupMemoryLimit(): number | undefined {
  const paths = parseCgroupPaths(read("/proc/self/cgroup") ?? "");
  const candidates: string[] = [];
  if (paths.memoryV1 !== undefined) {
    candidates.push(`/sys/fs/cgroup/memory${paths.memoryV1}/memory.limit_in_bytes`);
    candidates.push("/sys/fs/cgroup/memory/memory.limit_in_bytes"); // a container sees its own cgroup at the root
  }
  if (paths.v2 !== undefined) {
    candidates.push(`/sys/fs/cgroup${paths.v2}/memory.max`, "/sys/fs/cgroup/memory.max");
  }
  for (const file of candidates) {
    const text = read(file.replace("//", "/"));
    if (text !== undefined) return parseLimit(text);
  }
  return undefined;
}
