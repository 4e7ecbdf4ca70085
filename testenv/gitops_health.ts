/**
 * What GitOps tools make of a SyncConfig's status, computed by the very snippets docs/gitops.md prints (read from the
 * page, so that the documented text is what is tested): Argo CD's Lua health check run by a Lua VM (fengari),
 * Flux's healthCheckExprs run by a CEL evaluator under Flux's StatusEvaluator rules, kstatus's generic rules, and
 * kubectl wait's condition check. No control plane: unit tests use it on statuses lib/model/status.ts computes,
 * integration tests on statuses the controller wrote.
 */
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import fengari from "fengari";
import { Environment, type ParseResult } from "@marcbachmann/cel-js";
import { repoRoot } from "./build.ts";

/** A SyncConfig as read from the API server (or built by a test). */
export interface StatusObject {
  metadata: { generation?: number; deletionTimestamp?: string };
  status?: {
    observedGeneration?: number;
    conditions?: { type: string; status: string; message?: string; observedGeneration?: number }[];
    [k: string]: unknown;
  };
  [k: string]: unknown;
}

export type ArgoHealth = { status: string; message: string };
/** kstatus's statuses, as Flux and cli-utils report them; Error: an expression could not be evaluated (Flux waits). */
export type KStatus = "InProgress" | "Failed" | "Current" | "Terminating" | "Error";

interface Snippets {
  lua: string;
  flux: { inProgress?: string; failed?: string; current: string };
}

let snippets: Snippets | undefined;

/** The Argo CD and Flux snippets of docs/gitops.md (the argocd-cm ConfigMap and the Flux Kustomization). */
export function gitopsSnippets(): Snippets {
  if (snippets) return snippets;
  const page = Deno.readTextFileSync(join(repoRoot, "docs/gitops.md"));
  const blocks = [...page.matchAll(/```yaml\n([\s\S]*?)```/g)].flatMap((m) => parseAllDocuments(m[1]))
    .map((d) => d.toJS());
  const cm = blocks.find((b) => b?.kind === "ConfigMap" && b.metadata?.name === "argocd-cm");
  const ks = blocks.find((b) => b?.kind === "Kustomization");
  const lua = cm?.data?.["resource.customizations.health.sync.appuio.ch_SyncConfig"];
  const flux = ks?.spec?.healthCheckExprs?.find((e: { kind?: string }) => e.kind === "SyncConfig");
  if (typeof lua !== "string" || !flux?.current) throw new Error("docs/gitops.md lacks the Argo CD or Flux snippet");
  snippets = { lua, flux };
  return snippets;
}

// fengari ships no types: the few functions used here, as the Lua C API names them.
interface Fengari {
  lua: Record<string, (...a: unknown[]) => unknown> & { LUA_OK: number };
  lauxlib: Record<string, (...a: unknown[]) => unknown>;
  lualib: Record<string, (...a: unknown[]) => unknown>;
  to_luastring(s: string): Uint8Array;
}
const { lua, lauxlib, lualib, to_luastring } = fengari as unknown as Fengari;

/** Pushes a JSON value as Argo CD hands it to a health script: objects and arrays as tables, arrays from 1. */
function pushJson(L: unknown, v: unknown): void {
  if (v === null || v === undefined) lua.lua_pushnil(L);
  else if (typeof v === "string") lua.lua_pushstring(L, to_luastring(v));
  else if (typeof v === "number") lua.lua_pushnumber(L, v);
  else if (typeof v === "boolean") lua.lua_pushboolean(L, v);
  else if (Array.isArray(v)) {
    lua.lua_createtable(L, v.length, 0);
    v.forEach((x, i) => {
      pushJson(L, x);
      lua.lua_rawseti(L, -2, i + 1);
    });
  } else {
    lua.lua_createtable(L, 0, 0);
    for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
      if (x === null || x === undefined) continue;
      pushJson(L, x);
      lua.lua_setfield(L, -2, to_luastring(k));
    }
  }
}

let vm: unknown;

/** One Lua state with the documented health.lua compiled once, kept in the global `check`. */
function luaState(): unknown {
  if (vm) return vm;
  const L = lauxlib.luaL_newstate();
  lualib.luaL_openlibs(L);
  if (lauxlib.luaL_loadstring(L, to_luastring(gitopsSnippets().lua)) !== lua.LUA_OK) {
    throw new Error(`the Argo CD health check does not compile: ${lua.lua_tojsstring(L, -1)}`);
  }
  lua.lua_setglobal(L, to_luastring("check"));
  return vm = L;
}

/** Argo CD's verdict: the documented health.lua run with `obj` as its global. */
export function argoHealth(obj: StatusObject): ArgoHealth {
  const L = luaState();
  pushJson(L, obj);
  lua.lua_setglobal(L, to_luastring("obj"));
  lua.lua_getglobal(L, to_luastring("check"));
  if (lua.lua_pcall(L, 0, 1, 0) !== lua.LUA_OK) {
    const error = lua.lua_tojsstring(L, -1);
    lua.lua_pop(L, 1);
    throw new Error(`the Argo CD health check failed: ${error}`);
  }
  const field = (name: string) => {
    lua.lua_getfield(L, -1, to_luastring(name));
    const s = lua.lua_isstring(L, -1) ? String(lua.lua_tojsstring(L, -1)) : "";
    lua.lua_pop(L, 1);
    return s;
  };
  const health = { status: field("status"), message: field("message") };
  lua.lua_pop(L, 1);
  return health;
}

/** Flux's options for these expressions (fluxcd/pkg runtime/cel: optional types on, aggregates homogeneous). */
const cel = new Environment({ enableOptionalTypes: true, unlistedVariablesAreDyn: true });
const programs = new Map<string, ParseResult>();
/** Each expression parsed once (Flux compiles them once per Kustomization). */
function parsed(expr: string): ParseResult {
  let p = programs.get(expr);
  if (!p) programs.set(expr, p = cel.parse(expr));
  return p;
}

/**
 * Flux's verdict with the documented healthCheckExprs, by its StatusEvaluator's rules (fluxcd/pkg runtime/cel): a
 * status.observedGeneration unlike metadata.generation is InProgress; else inProgress, failed, current in this order,
 * the first true decides; none true is InProgress. The variables are the object's top-level fields.
 */
export function fluxHealth(obj: StatusObject): KStatus {
  const og = obj.status?.observedGeneration;
  if (og !== undefined && obj.metadata.generation !== undefined && og !== obj.metadata.generation) return "InProgress";
  const { inProgress, failed, current } = gitopsSnippets().flux;
  const order: [string | undefined, KStatus][] = [[inProgress, "InProgress"], [failed, "Failed"], [current, "Current"]];
  for (const [expr, verdict] of order) {
    if (!expr) continue;
    let result: unknown;
    try {
      result = parsed(expr)(obj);
    } catch {
      return "Error";
    }
    if (result === true) return verdict;
  }
  return "InProgress";
}

/**
 * kstatus's generic rules (cli-utils pkg/kstatus/status/generic.go), which decide for a kind without rules of its own:
 * Terminating while deleted; InProgress when status.observedGeneration differs from metadata.generation; the first of
 * Reconciling=True (InProgress) or Stalled=True (Failed) among the conditions; else Current.
 */
export function kstatusGeneric(obj: StatusObject): KStatus {
  if (obj.metadata.deletionTimestamp) return "Terminating";
  const og = obj.status?.observedGeneration;
  if (og !== undefined && obj.metadata.generation !== undefined && og !== obj.metadata.generation) return "InProgress";
  for (const c of obj.status?.conditions ?? []) {
    if (c.type === "Reconciling" && c.status === "True") return "InProgress";
    if (c.type === "Stalled" && c.status === "True") return "Failed";
  }
  return "Current";
}

/**
 * Whether `kubectl wait --for=condition=<type>=<status>` is satisfied (k8s.io/kubectl pkg/cmd/wait/condition.go):
 * the first condition of the type decides, unless its observedGeneration (or status.observedGeneration) is lower
 * than metadata.generation.
 */
export function kubectlWaitMet(obj: StatusObject, type: string, status = "True"): boolean {
  const c = obj.status?.conditions?.find((c) => c.type.toLowerCase() === type.toLowerCase());
  if (!c) return false;
  const generation = obj.metadata.generation;
  const observed = c.observedGeneration ?? obj.status?.observedGeneration;
  if (generation !== undefined && observed !== undefined && observed < generation) return false;
  return c.status.toLowerCase() === status.toLowerCase();
}
