/**
 * `espejo plan` masks a Secret by what espejo's resolver (lib/kube/discovery.ts) makes of an item's apiVersion and
 * kind, not by how they are spelled: the whole plan (snapshot, planner, dry run, text and JSON) against a fake API
 * server, for every spelling the resolver admits as the core Secret.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import type { KubeClient, KubeRequest } from "../../lib/kube/client.ts";
import { Discovery, type ResourceInfo } from "../../lib/kube/discovery.ts";
import { ApiError } from "../../lib/kube/errors.ts";
import { encodeBase64, type KubeObject } from "../../lib/kube/objects.ts";
import { MANAGED_LABEL, MANAGED_LABEL_VALUE, OWNER_ANNOTATION } from "../../lib/model/markers.ts";
import { isSecretResource } from "../../lib/model/redact.ts";
import { byRules } from "../../lib/plan/comparison.ts";
import { dryRun } from "../../lib/plan/dry_run.ts";
import { type PlanEntry, planSnapshot } from "../../lib/plan/plan.ts";
import { type PlanReport, renderJson, renderText } from "../../lib/plan/render.ts";
import { takeSnapshot } from "../../lib/plan/snapshot.ts";
import { syncConfigsPath } from "../../lib/sync/syncconfig_api.ts";
import { pieces, placeholders, secretValues } from "./secret_values.ts";

const CFG_NS = "espejo";
const NS = "team-a";
const LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration";
const KEYS = ["password", "token"];

const resource = (group: string, version: string, name: string, kind: string) => ({
  name,
  kind,
  namespaced: true,
  verbs: ["create", "delete", "get", "list", "patch", "update", "watch"],
  group,
  version,
});
/** Discovery as the API server serves it, and a CRD of another group that calls its kind Secret too. */
const DISCOVERY: Record<string, ReturnType<typeof resource>[]> = {
  "/api/v1": [resource("", "v1", "secrets", "Secret"), resource("", "v1", "configmaps", "ConfigMap")],
  "/apis/example.com/v1": [resource("example.com", "v1", "secrets", "Secret")],
};

/**
 * A fake API server holding one Secret `team-a/db` (`live`, listed without kind, as lists are), whose dry-run writes
 * are all refused with `refusal(whether the write goes to the core Secret)`.
 */
function fakeServer(live: KubeObject | undefined, refusal: (coreSecret: boolean) => string): KubeClient {
  return {
    request<T>(req: KubeRequest): Promise<T> {
      const reply = (body: unknown) => Promise.resolve(body as T);
      const { method, path } = req;
      if (method !== "GET") {
        return Promise.reject(
          new ApiError(400, "BadRequest", refusal(path.startsWith(`/api/v1/namespaces/${NS}/secrets`))),
        );
      }
      if (path === "/api/v1/namespaces") {
        return reply({ items: [{ metadata: { name: NS }, status: { phase: "Active" } }] });
      }
      if (path === syncConfigsPath(CFG_NS)) return reply({ items: [] });
      if (DISCOVERY[path]) return reply({ resources: DISCOVERY[path] });
      if (path === "/api/v1/secrets") return reply({ items: live ? [live] : [] });
      if (path === "/api/v1/configmaps" || path === "/apis/example.com/v1/secrets") return reply({ items: [] });
      return Promise.reject(new ApiError(404, "NotFound", `the server could not find the requested resource`));
    },
    watch() {
      throw new Error("espejo plan does not watch");
    },
  };
}

/** Where a Secret's values sit: in the item (`data`, `stringData`), in the live object and its kubectl annotation. */
const secretShape = fc.record({
  itemData: fc.constantFrom("none", "data", "stringData"),
  liveExists: fc.boolean(),
  liveLabelled: fc.boolean(),
  liveApplied: fc.constantFrom("none", "data", "stringData"),
  /** What a refused dry run said: a field error quoting the value, or a webhook's own words, plain or base64. */
  quote: fc.constantFrom("field", "plain", "base64"),
});
type Shape = typeof secretShape extends fc.Arbitrary<infer T> ? T : never;

/** The item and the live Secret, with values `d[i]` and `o[i]` for key `KEYS[i]`. */
function secretCase(apiVersion: string, kind: string, shape: Shape, d: string[], o: string[]) {
  const plain = (vs: string[]) => Object.fromEntries(KEYS.map((k, i) => [k, vs[i]]));
  const data = (vs: string[]) => Object.fromEntries(KEYS.map((k, i) => [k, encodeBase64(vs[i])]));
  const item: KubeObject = {
    apiVersion,
    kind,
    metadata: { name: "db" },
    type: "Opaque",
    ...(shape.itemData === "data"
      ? { data: data(d) }
      : shape.itemData === "stringData"
      ? { stringData: plain(d) }
      : {}),
  };
  const applied: Record<string, string> = shape.liveApplied === "none" ? {} : {
    [LAST_APPLIED]: JSON.stringify({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "db", namespace: NS },
      ...(shape.liveApplied === "data" ? { data: data(o) } : { stringData: plain(o) }),
    }),
  };
  const live: KubeObject | undefined = shape.liveExists
    ? {
      metadata: {
        name: "db",
        namespace: NS,
        uid: "uid-db",
        resourceVersion: "7",
        labels: shape.liveLabelled ? { [MANAGED_LABEL]: MANAGED_LABEL_VALUE } : {},
        annotations: { [OWNER_ANNOTATION]: `${CFG_NS}/cfg`, ...applied },
      },
      data: data(o),
      type: "Opaque",
    }
    : undefined;
  // A refusal can quote only what the write carries: the item's values and the live object's (only a write to the
  // core Secret has that one).
  const refusal = (coreSecret: boolean) => {
    const carried = [...(shape.itemData !== "none" ? [d[0]] : []), ...(live && coreSecret ? [o[0]] : [])];
    const quoted = carried.map((v) => shape.quote === "plain" ? v : encodeBase64(v)).join(" replaces ");
    return shape.quote === "field"
      ? `Secret "db" is invalid: data[${KEYS[0]}]: Invalid value: ${JSON.stringify(d[0])}: bad`
      : `admission webhook "v.example.com" denied the request: ${KEYS[0]} ${quoted}`;
  };
  return { item, live, refusal };
}

/** Every string of a JSON document, keys included, one per line. */
function jsonStrings(text: string): string {
  const strings: string[] = [];
  const collect = (v: unknown): void => {
    if (typeof v === "string") strings.push(v);
    else if (Array.isArray(v)) v.forEach(collect);
    else if (v && typeof v === "object") Object.entries(v).forEach(([k, x]) => (strings.push(k), collect(x)));
  };
  collect(JSON.parse(text));
  return strings.join("\n");
}

/** `espejo plan -f` of one SyncConfig with the item, by espejo's rules and by a dry run, in text and in JSON. */
async function planOf(apiVersion: string, kind: string, shape: Shape, d: string[], o: string[]) {
  const { item, live, refusal } = secretCase(apiVersion, kind, shape, d, o);
  const client = fakeServer(live, refusal);
  const syncConfig = {
    apiVersion: "sync.appuio.ch/v1alpha1",
    kind: "SyncConfig",
    metadata: { name: "cfg", namespace: CFG_NS, generation: 1, uid: "uid-cfg" },
    spec: { namespaceSelector: { matchNames: [NS] }, syncItems: [item] },
  };
  const snapshot = await takeSnapshot(client, {
    watchNamespace: CFG_NS,
    files: [{ syncConfig, source: "cfg.yaml" }],
    namespaces: [],
    progress: () => {},
  });
  const { configs, unchanged, context } = await planSnapshot(snapshot, false, { files: true, all: false });
  const entries = configs.flatMap((c) => c.entries);
  const report = (e: PlanEntry[], mode: "rules" | "server-dry-run"): PlanReport => ({
    configs: configs.map((c) => ({ ...c, entries: e })),
    unchanged,
    context,
    syncConfigsFrom: `namespace ${CFG_NS}`,
    comparison: { mode, why: "test" },
  });
  const rules = report(byRules(entries).entries, "rules");
  const dry = report((await dryRun(client, entries, () => {})).entries, "server-dry-run");
  const outputs = [rules, dry].flatMap((r) => [renderText(r), renderJson(r), jsonStrings(renderJson(r))]);
  return { entries, outputs, resolved: snapshot.resources.values().next().value };
}

/**
 * The apiVersions the resolver maps to the core group's v1, found by asking it: every string of up to four
 * characters over the characters an apiVersion of the core group could be spelled with (and near misses: case,
 * whitespace, a dot, a doubled slash).
 */
async function coreV1Spellings(): Promise<string[]> {
  const alphabet = ["v", "1", "/", " ", "V", ".", "\t"];
  const all: string[] = [""];
  for (let len = 1; len <= 4; len++) {
    for (const s of all.filter((s) => s.length === len - 1)) all.push(...alphabet.map((c) => s + c));
  }
  const discovery = new Discovery(fakeServer(undefined, () => ""));
  const admitted: string[] = [];
  for (const apiVersion of all) {
    try {
      const r = await discovery.resolve(apiVersion, "Secret");
      if (r.group === "" && r.version === "v1") admitted.push(apiVersion);
    } catch {
      // not served: such an item fails, showing nothing of the object
    }
  }
  return admitted;
}

const ADMITTED = await coreV1Spellings();

Deno.test("the resolver admits the core Secret as apiVersion v1 and /v1, nothing else of up to four characters", () => {
  assert.deepEqual(ADMITTED.sort(), ["/v1", "v1"]);
});

/**
 * The outputs show no value of the live Secret (and, with `item`, none of the item's), no base64 of one, no eight
 * characters of either, and do not depend on them.
 */
async function assertMasked(apiVersion: string, kind: string, shape: Shape, vs: string[], item: boolean) {
  const d = vs.slice(0, KEYS.length);
  const o = vs.slice(KEYS.length);
  const shown = await planOf(apiVersion, kind, shape, d, o);
  const without = await planOf(
    apiVersion,
    kind,
    shape,
    item ? placeholders(KEYS, "item") : d,
    placeholders(KEYS, "live"),
  );
  assert.deepEqual(shown.outputs, without.outputs);
  shown.outputs.forEach((out, i) => {
    for (const piece of pieces(item ? vs : o).filter((p) => !without.outputs[i].includes(p))) {
      assert.ok(
        !out.includes(piece),
        `${JSON.stringify(piece)} shown for apiVersion ${JSON.stringify(apiVersion)}:\n${out}`,
      );
    }
  });
  return shown;
}

Deno.test("plan shows no Secret value for any apiVersion spelling the resolver admits as core v1, text or JSON", async () => {
  await fc.assert(
    fc.asyncProperty(fc.constantFrom(...ADMITTED), secretShape, secretValues(KEYS), async (apiVersion, shape, vs) => {
      const { entries, resolved } = await assertMasked(apiVersion, "Secret", shape, vs, true);
      // The plan did compare the Secret (the property is not met by failing the item).
      assert.ok(resolved && !(resolved instanceof Error) && isSecretResource(resolved));
      assert.ok(entries.every((e) => e.action !== "fail"), JSON.stringify(entries));
    }),
    { numRuns: 150 },
  );
});

/**
 * Whatever an item says, what is read of the core Secret stays hidden; what the item itself sets is hidden when it
 * resolves to the core Secret (else it is another kind's content, which its author wrote, shown as for any kind).
 */
Deno.test("plan shows no Secret value whatever an item's apiVersion and kind are spelled", async () => {
  const spelling = fc.oneof(
    fc.constantFrom(...ADMITTED, "core/v1", "V1", " v1", "/v1 ", "//v1", "example.com/v1", "v1/"),
    fc.string({ unit: fc.constantFrom("v", "1", "/", " ", "V", "."), maxLength: 6 }),
  );
  const kind = fc.constantFrom("Secret", "secret", "Secrets", " Secret", "SECRET");
  await fc.assert(
    fc.asyncProperty(spelling, kind, secretShape, secretValues(KEYS), async (apiVersion, k, shape, vs) => {
      const resolved = await new Discovery(fakeServer(undefined, () => "")).resolve(apiVersion, k).catch(() =>
        undefined
      );
      await assertMasked(apiVersion, k, shape, vs, resolved === undefined || isSecretResource(resolved));
    }),
    { numRuns: 150 },
  );
});

Deno.test("plan of a Secret spelled /v1 shows its keys masked, in text and JSON, before and after a dry run", async () => {
  const shape: Shape = {
    itemData: "stringData",
    liveExists: true,
    liveLabelled: false,
    liveApplied: "data",
    quote: "plain",
  };
  const { outputs, entries } = await planOf("/v1", "Secret", shape, ["wanted-1", "wanted-2"], [
    "hunter2-1",
    "hunter2-2",
  ]);
  assert.deepEqual(entries.map((e) => `${e.action} ${e.kind} ${e.name}`), ["adopt Secret db"]);
  const [text, , , dryText] = outputs;
  // Compiled as v1 (canonicalApiVersion): its stringData is written as data, as for an item spelled v1.
  assert.match(text, /~ \.data\.password: \*\*\* \(before\) -> \*\*\* \(after\)\n/);
  assert.doesNotMatch(text, /stringData/);
  assert.match(text, /- \.metadata\.annotations\.kubectl\.kubernetes\.io\/last-applied-configuration: \*\*\*\n/);
  assert.match(dryText, /would reject the adopt: .*denied the request: password \[redacted\] replaces \[redacted\]/);
  for (const out of outputs) assert.doesNotMatch(out, /hunter2|wanted-|aHVudGVy|d2FudGVk/);
});

Deno.test("isSecretResource: the core group's secrets, and anything not resolved (masking fails closed)", () => {
  const r = (group: string, resource: string, kind = "Secret"): ResourceInfo => ({
    group,
    version: "v1",
    resource,
    kind,
    namespaced: true,
    verbs: [],
  });
  assert.equal(isSecretResource(r("", "secrets")), true);
  assert.equal(isSecretResource({ group: "", resource: "secrets" }), true);
  assert.equal(isSecretResource(undefined), true);
  assert.equal(isSecretResource(r("", "configmaps", "ConfigMap")), false);
  assert.equal(isSecretResource(r("example.com", "secrets")), false);
});
