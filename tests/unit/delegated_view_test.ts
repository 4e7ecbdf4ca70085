/**
 * What a SyncConfig of an untrusted namespace sees of a namespace (lib/sync/delegated_view.ts), with its
 * ServiceAccount's rights as a table: hidden where it may not get the namespace, items refused where it may not read
 * their kind, contests only where it may write, deferred where its reviews wait or fail; a trusted SyncConfig asks
 * nothing.
 */
import assert from "node:assert/strict";
import type { ResourceAttributes } from "../../lib/kube/access_review.ts";
import { ApiError } from "../../lib/kube/errors.ts";
import { UnknownKindError } from "../../lib/kube/discovery.ts";
import type { ResourceInfo } from "../../lib/kube/discovery.ts";
import { type CompiledSyncConfig, compileSyncConfig } from "../../lib/model/syncconfig.ts";
import { DelegatedView } from "../../lib/sync/delegated_view.ts";
import { type Asker, ReviewsPaced, type Right } from "../../lib/sync/rights.ts";

const TRUSTED = { trustedNamespaces: ["espejo"] };

function compiled(namespace: string, name: string, spec: Record<string, unknown>): CompiledSyncConfig {
  const annotations = namespace === "espejo" ? undefined : { "sync.appuio.ch/service-account": "writer" };
  const r = compileSyncConfig({
    metadata: { namespace, name, generation: 1, uid: name, annotations },
    spec: { namespaceSelector: { matchNames: [".*"] }, ...spec } as never,
  }, TRUSTED);
  if (!r.ok) throw new Error(r.message);
  return r.config;
}

const cm = (name: string) => ({ apiVersion: "v1", kind: "ConfigMap", metadata: { name }, data: {} });
const delCm = (name: string) => ({ apiVersion: "v1", kind: "ConfigMap", name });
const CONFIGMAPS: ResourceInfo = {
  resource: "configmaps",
  namespaced: true,
  group: "",
  version: "v1",
  kind: "ConfigMap",
  verbs: [],
};

/**
 * A view whose rights are `granted` (`cfgKey verb resource namespace`); `fail`: every review of that SyncConfig
 * rejects with it; `unknownKinds`: kinds discovery does not know. Records what was asked and what was said of failed
 * reviews.
 */
function view(granted: string[], o: { fail?: Record<string, unknown>; unknownKinds?: string[] } = {}) {
  const asked: string[] = [];
  const said: string[] = [];
  const may = (asker: Asker, a: ResourceAttributes): Promise<Right> => {
    const line = `${asker.key} ${a.verb} ${a.resource} ${a.namespace ?? ""}`;
    asked.push(line);
    if (o.fail?.[asker.key]) return Promise.reject(o.fail[asker.key]);
    return Promise.resolve(
      granted.includes(line) ? { allowed: true } : { allowed: false, denial: `denied: ${line}`, recheckInMs: 5000 },
    );
  };
  const v = new DelegatedView({
    rights: { may, forgetConfig: () => {} },
    resolve: (apiVersion, kind) =>
      o.unknownKinds?.includes(kind)
        ? Promise.reject(new UnknownKindError(`no kind ${kind} in ${apiVersion}`))
        : Promise.resolve(CONFIGMAPS),
    onReviewFailed: (cfgKey, message) => said.push(`${cfgKey}: ${message}`),
  });
  return { v, asked, said };
}

Deno.test("DelegatedView: a trusted SyncConfig sees everything, and nothing is asked for it", async () => {
  const { v, asked } = view([]);
  const platform = compiled("espejo", "platform", { syncItems: [cm("a")], deleteItems: [delCm("b")] });
  const seen = await v.of([platform], "team-b-1");
  assert.deepEqual(seen.visible, [platform]);
  assert.deepEqual([seen.hidden, seen.refused.size, seen.retry, asked], [[], 0, false, []]);
});

Deno.test("DelegatedView: a namespace the ServiceAccount may not get is hidden, and nothing else is asked", async () => {
  const { v, asked } = view([]);
  const team = compiled("team-a", "probe", { syncItems: [cm("a")], deleteItems: [delCm("b"), delCm("c")] });
  const seen = await v.of([team], "team-b-1");
  assert.deepEqual([seen.visible, seen.hidden], [[], ["team-a/probe"]]);
  assert.deepEqual(asked, ["team-a/probe get namespaces team-b-1"]);
  assert.equal(seen.retryInMs, 5000, "the unit comes back when the denial is asked again (a RoleBinding may follow)");
});

Deno.test("DelegatedView: items whose object the ServiceAccount may not read fail before anything is read", async () => {
  const { v } = view([
    "team-a/t get namespaces team-b-1",
    "team-a/deleter delete configmaps team-b-1",
    "team-a/reader get configmaps team-b-1",
  ]);
  const blind = compiled("team-a", "t", { syncItems: [cm("one")], deleteItems: [delCm("two")] });
  const seen = await v.of([blind], "team-b-1");
  assert.deepEqual(seen.visible, [blind]);
  const refused = seen.refused.get("team-a/t")!;
  assert.deepEqual([...refused.keys()].sort(), [".spec.deleteItems[0]", ".spec.syncItems[0]"]);
  const sync = refused.get(".spec.syncItems[0]")!;
  assert.match(
    sync.message,
    /^SyncConfig team-a\/t: \.spec\.syncItems\[0\] \(ConfigMap one\) in namespace team-b-1: its ServiceAccount may not get the object \(denied: team-a\/t get configmaps team-b-1\)/,
  );
  assert.equal(sync.terminal, true, "it waits for a change, not a back-off");
  assert.match(refused.get(".spec.deleteItems[0]")!.message, /may neither get nor delete the object/);
  // May delete (not get): a deleteItem is decided from the cache, as a delete by the ServiceAccount would tell.
  const { v: v2 } = view(["team-a/deleter get namespaces team-b-1", "team-a/deleter delete configmaps team-b-1"]);
  const deleter = compiled("team-a", "deleter", { syncItems: [cm("one")], deleteItems: [delCm("two")] });
  const seen2 = await v2.of([deleter], "team-b-1");
  assert.deepEqual([...seen2.refused.get("team-a/deleter")!.keys()], [".spec.syncItems[0]"]);
});

Deno.test("DelegatedView: the refusal reads as the API server's, with the hint that says who grants it", async () => {
  const denial = 'configmaps "x" is forbidden: User "system:serviceaccount:team-a:writer" cannot get resource ' +
    '"configmaps" in API group "" in the namespace "team-b-1"';
  const v = new DelegatedView({
    rights: {
      may: (_a, attributes) =>
        Promise.resolve(
          attributes.resource === "namespaces" ? { allowed: true } : { allowed: false, denial, recheckInMs: 7000 },
        ),
      forgetConfig: () => {},
    },
    resolve: () => Promise.resolve(CONFIGMAPS),
  });
  const seen = await v.of([compiled("team-a", "t", { syncItems: [cm("x")] })], "team-b-1");
  assert.match(
    seen.refused.get("team-a/t")!.get(".spec.syncItems[0]")!.message,
    /the SyncConfig writes as ServiceAccount team-a\/writer: grant it with a RoleBinding in namespace team-b-1/,
  );
  assert.equal(seen.retryInMs, 7000, "a refused item is decided again when its denial is asked again");
});

Deno.test("DelegatedView: a review that cannot be made defers the SyncConfig, comes back, and is said once", async () => {
  const outage = new ApiError(503, "ServiceUnavailable", "the server is currently unable to handle the request");
  const { v, said } = view([], { fail: { "team-a/t": outage } });
  const team = compiled("team-a", "t", { syncItems: [cm("x")] });
  for (const ns of ["team-b-1", "team-b-2"]) {
    const seen = await v.of([team], ns);
    // Deferred, not hidden: its counts there stay as they were (not emptied into a Ready status of nothing).
    assert.deepEqual([seen.visible, seen.hidden, seen.deferred, seen.retry], [[], [], ["team-a/t"], true]);
  }
  assert.equal(said.length, 1, "one Event and log line per cause, not per namespace");
  assert.doesNotMatch(said[0], /team-b-/, "the namespaces it could not review are not named");
  v.forgetConfig("team-a/t");
  await v.of([team], "team-b-1");
  assert.equal(said.length, 2, "said again once the SyncConfig changed");
});

Deno.test("DelegatedView: reviews past the team's pace defer the SyncConfig and come back, holding nothing", async () => {
  const v = new DelegatedView({
    rights: { may: () => Promise.reject(new ReviewsPaced(1500)), forgetConfig: () => {} },
    resolve: () => Promise.resolve(CONFIGMAPS),
  });
  const seen = await v.of([compiled("team-a", "t", { syncItems: [cm("x")] })], "team-b-1");
  assert.deepEqual([seen.deferred, seen.retry, seen.retryInMs], [["team-a/t"], false, 1500]);
});

Deno.test("DelegatedView: an item whose kind cannot be resolved fails with why, not decided from the cache", async () => {
  const { v } = view(["team-a/t get namespaces team-b-1"], { unknownKinds: ["Widget"] });
  const team = compiled("team-a", "t", {
    syncItems: [{ apiVersion: "example.com/v1", kind: "Widget", metadata: { name: "w" } }],
  });
  const seen = await v.of([team], "team-b-1");
  assert.match(seen.refused.get("team-a/t")!.get(".spec.syncItems[0]")!.message, /Widget/);
});

const TEAM_B_WRITES = [
  "team-b/b get namespaces team-b-1",
  "team-b/b get configmaps team-b-1",
  "team-b/b create configmaps team-b-1",
  "team-b/b update configmaps team-b-1",
];

Deno.test("DelegatedView.contests: a team that may not delete the object switches nothing off", async () => {
  const { v } = view(["team-a/a get namespaces team-b-1", "team-a/a get configmaps team-b-1", ...TEAM_B_WRITES]);
  const configs = [
    compiled("team-a", "a", { deleteItems: [delCm("shared")] }),
    compiled("team-b", "b", { syncItems: [cm("shared")] }),
  ];
  const seen = await v.of(configs, "team-b-1");
  assert.deepEqual((await v.contests(seen, "team-b-1", [])).size, 0);
});

Deno.test("DelegatedView.contests: a team that may delete contests, and the syncItem is kept", async () => {
  const { v } = view([
    "team-a/a get namespaces team-b-1",
    "team-a/a delete configmaps team-b-1",
    ...TEAM_B_WRITES,
  ]);
  const configs = [
    compiled("team-a", "a", { deleteItems: [delCm("shared")] }),
    compiled("team-b", "b", { syncItems: [cm("shared")] }),
  ];
  const kept = await v.contests(await v.of(configs, "team-b-1"), "team-b-1", []);
  assert.deepEqual([...kept.keys()], ["team-a/a"], "the syncItem goes on");
  assert.match(kept.get("team-a/a")!.get(".spec.deleteItems[0]")!.problem, /is kept against another's deleteItem/);
});

Deno.test("DelegatedView.contests: a trusted SyncConfig's items are left to the unit, and outrank the team's", async () => {
  const { v } = view(["team-a/a get namespaces team-b-1", "team-a/a delete configmaps team-b-1"]);
  const platform = compiled("espejo", "platform", { syncItems: [cm("shared")] });
  const team = compiled("team-a", "a", { deleteItems: [delCm("shared")] });
  const out = await v.contests(await v.of([team], "team-b-1"), "team-b-1", [platform]);
  assert.deepEqual([...out.keys()], ["team-a/a"]);
  assert.match(out.get("team-a/a")!.get(".spec.deleteItems[0]")!.problem, /trusted namespace outranks this one/);
});

Deno.test("DelegatedView.contests: a right that could not be reviewed leaves the contest undecided, tried again", async () => {
  const outage = new ApiError(503, "ServiceUnavailable", "unavailable");
  let failing = false;
  const may = (asker: Asker, a: ResourceAttributes): Promise<Right> =>
    failing && a.verb !== "get" ? Promise.reject(outage) : Promise.resolve(
      asker.key === "team-a/a" || a.verb !== "delete" ? { allowed: true } : {
        allowed: false,
        denial: "denied",
        recheckInMs: 5000,
      },
    );
  const v = new DelegatedView({ rights: { may, forgetConfig: () => {} }, resolve: () => Promise.resolve(CONFIGMAPS) });
  const configs = [
    compiled("team-a", "a", { deleteItems: [delCm("shared")] }),
    compiled("team-b", "b", { syncItems: [cm("shared")] }),
  ];
  const seen = await v.of(configs, "team-b-1");
  failing = true;
  const out = await v.contests(seen, "team-b-1", []);
  assert.deepEqual([...out.keys()].sort(), ["team-a/a", "team-b/b"], "neither is done");
  for (const items of out.values()) for (const c of items.values()) assert.equal(c.undecided, true);
});
