/**
 * `deno task openapi`: starts the test control plane, installs the CRD, and keeps of the API server's OpenAPI v3
 * documents exactly what scripts/api_surface.ts names (those operations, and the schemas they and the named types
 * refer to), in `openapi/`. Run it when the Kubernetes version of the test control plane changes, then
 * `deno task gen-types`.
 */
import { ControlPlane } from "../testenv/controlplane.ts";
import { installBase } from "../testenv/shared.ts";
import { API_DOCUMENTS } from "./api_surface.ts";

// deno-lint-ignore no-explicit-any
type Doc = any;

const METHODS = ["get", "put", "post", "delete", "patch"];

/** Every `#/components/schemas/X` reachable from `roots`. */
function closure(doc: Doc, roots: Iterable<string>): Set<string> {
  const seen = new Set<string>();
  const visit = (v: unknown): void => {
    if (Array.isArray(v)) v.forEach(visit);
    else if (v && typeof v === "object") {
      for (const [k, x] of Object.entries(v)) {
        if (k === "$ref" && typeof x === "string") add(x.replace("#/components/schemas/", ""));
        else visit(x);
      }
    }
  };
  const add = (name: string): void => {
    if (seen.has(name)) return;
    if (!doc.components?.schemas?.[name]) throw new Error(`schema ${name} not in the document`);
    seen.add(name);
    visit(doc.components.schemas[name]);
  };
  for (const r of roots) add(r);
  return seen;
}

export function trim(doc: Doc, types: string[], operations: string[]): Doc {
  const paths: Doc = {};
  const refs: unknown[] = [];
  const found = new Set<string>();
  for (const [path, item] of Object.entries<Doc>(doc.paths ?? {})) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op || !operations.includes(op.operationId)) continue;
      found.add(op.operationId);
      const parameters = [...(item.parameters ?? []), ...(op.parameters ?? [])].filter((p: Doc) => p.in === "path");
      const kept: Doc = { operationId: op.operationId, description: op.description, parameters };
      if (op.requestBody) kept.requestBody = op.requestBody;
      kept.responses = Object.fromEntries(Object.entries<Doc>(op.responses ?? {}).filter(([code]) => code < "300"));
      refs.push(kept.requestBody, kept.responses);
      (paths[path] ??= {})[method] = kept;
    }
  }
  const missing = operations.filter((o) => !found.has(o));
  if (missing.length) throw new Error(`operations not in the document: ${missing.join(", ")}`);
  // Only the JSON bodies are kept (a create takes `*/*`): the controller speaks nothing else.
  const jsonOnly = (v: Doc): void => {
    if (v?.content) {
      v.content = Object.fromEntries(Object.entries(v.content).filter(([t]) => t.includes("json") || t === "*/*"));
    }
  };
  for (const item of Object.values<Doc>(paths)) {
    for (const op of Object.values<Doc>(item)) {
      jsonOnly(op.requestBody);
      Object.values<Doc>(op.responses).forEach(jsonOnly);
    }
  }
  const names = closure({ ...doc }, [...types, ...refNames(refs)]);
  const schemas = Object.fromEntries([...names].sort().map((n) => [n, doc.components.schemas[n]]));
  return { openapi: doc.openapi, info: doc.info, paths, components: { schemas } };
}

function refNames(v: unknown, out: string[] = []): string[] {
  if (Array.isArray(v)) v.forEach((x) => refNames(x, out));
  else if (v && typeof v === "object") {
    for (const [k, x] of Object.entries(v)) {
      if (k === "$ref" && typeof x === "string") out.push(x.replace("#/components/schemas/", ""));
      else refNames(x, out);
    }
  }
  return out;
}

if (import.meta.main) {
  const cp = await ControlPlane.start({});
  try {
    await installBase(cp.client()); // closes the client it is given
    const client = cp.client();
    for (const d of API_DOCUMENTS) {
      // The CRD's document appears a moment after the CRD is established.
      let doc: Doc;
      for (let attempt = 0;; attempt++) {
        try {
          doc = await client.request({ method: "GET", path: `/openapi/v3/${d.path}` });
          break;
        } catch (e) {
          if (attempt >= 30) throw e;
          await new Promise((r) => setTimeout(r, 1000));
        }
      }
      const trimmed = trim(doc, d.types, Object.keys(d.operations));
      await Deno.writeTextFile(new URL(`../${d.file}`, import.meta.url), JSON.stringify(trimmed, null, 2) + "\n");
      console.log(`wrote ${d.file}: ${Object.keys(trimmed.components.schemas).length} schemas`);
    }
    client.close();
  } finally {
    await cp.stop();
  }
}
