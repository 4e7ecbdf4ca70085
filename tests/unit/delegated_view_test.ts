/**
 * What a SyncConfig of an untrusted namespace sees of a namespace (lib/sync/delegated_view.ts), with its
 * ServiceAccount's rights as a table: hidden where it may not get the namespace, items refused where it may not read
 * their object, contests only where it may write; a trusted SyncConfig asks nothing.
 */
import assert from "node:assert/strict";
import type { ResourceAttributes } from "../../lib/kube/access_review.ts";
import { ApiError } from "../../lib/kube/errors.ts";
import type { ResourceInfo } from "../../lib/kube/discovery.ts";
import { type CompiledSyncConfig, compileSyncConfig } from "../../lib/model/syncconfig.ts";
import { DelegatedView } from "../../lib/sync/delegated_view.ts";
import type { Asker, Right } from "../../lib/sync/rights.ts";

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
 * A view whose rights are `granted` (`cfgKey verb resource namespace[/name]`, `*` for any name); `fail`: every review
 * of that SyncConfig rejects with it. Records what was asked and what was said of failed reviews.
 */
function view(granted: string[], o: { fail?: Record<string, unknown>; owner?: string } = {}) {
  const asked: string[] = [];
  const said: string[] = [];
  const may = (asker: Asker, a: ResourceAttributes): Promise<Right> => {
    const line = `${asker.key} ${a.verb} ${a.resource} ${a.namespace ?? ""}/${a.name ?? "*"}`;
    asked.push(line);
    if (o.fail?.[asker.key]) return Promise.reject(o.fail[asker.key]);
    const ok = granted.includes(line) ||
      granted.includes(`${asker.key} ${a.verb} ${a.resource} ${a.namespace ?? ""}/*`);
    return Promise.resolve(ok ? { allowed: true } : { allowed: false, denial: `denied: ${line}`, recheckInMs: 5000 });
  };
  const v = new DelegatedView({
    rights: { may, forgetConfig: () => {} },
    resolve: () => Promise.resolve(CONFIGMAPS),
    ownerOf: () => o.owner,
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
  assert.deepEqual(asked, ["team-a/probe get namespaces team-b-1/team-b-1"]);
  assert.equal(seen.retryInMs, 5000, "the unit comes back when the denial is asked again (a RoleBinding may follow)");
});

Deno.test("DelegatedView: items whose object the ServiceAccount may not read fail before anything is read", async () => {
  const { v } = view([
    "team-a/t get namespaces team-b-1/team-b-1",
    "team-a/t get configmaps team-b-1/readable",
    "team-a/t delete configmaps team-b-1/deletable",
  ]);
  const team = compiled("team-a", "t", {
    syncItems: [cm("readable"), cm("secret-one")],
    deleteItems: [delCm("deletable"), delCm("secret-two")],
  });
  const seen = await v.of([team], "team-b-1");
  assert.deepEqual(seen.visible, [team]);
  const refused = seen.refused.get("team-a/t")!;
  assert.deepEqual([...refused.keys()].sort(), [".spec.deleteItems[1]", ".spec.syncItems[1]"]);
  const sync = refused.get(".spec.syncItems[1]")!;
  assert.match(
    sync.message,
    /^SyncConfig team-a\/t: \.spec\.syncItems\[1\] \(ConfigMap secret-one\) in namespace team-b-1: its ServiceAccount may not get the object \(denied: team-a\/t get configmaps team-b-1\/secret-one\)/,
  );
  assert.equal(sync.terminal, true, "it waits for a change, not a back-off");
  assert.match(refused.get(".spec.deleteItems[1]")!.message, /may neither get nor delete the object/);
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
    ownerOf: () => undefined,
  });
  const seen = await v.of([compiled("team-a", "t", { syncItems: [cm("x")] })], "team-b-1");
  assert.match(
    seen.refused.get("team-a/t")!.get(".spec.syncItems[0]")!.message,
    /the SyncConfig writes as ServiceAccount team-a\/writer: grant it with a RoleBinding in namespace team-b-1/,
  );
  assert.equal(seen.retryInMs, 7000, "a refused item is decided again when its denial is asked again");
});

Deno.test("DelegatedView: a review that cannot be made hides the namespace, comes back, and is said once", async () => {
  const outage = new ApiError(503, "ServiceUnavailable", "the server is currently unable to handle the request");
  const { v, said } = view([], { fail: { "team-a/t": outage } });
  const team = compiled("team-a", "t", { syncItems: [cm("x")] });
  for (const ns of ["team-b-1", "team-b-2"]) {
    const seen = await v.of([team], ns);
    assert.deepEqual([seen.visible, seen.hidden, seen.retry], [[], ["team-a/t"], true]);
  }
  assert.equal(said.length, 1, "one Event and log line per cause, not per namespace");
  assert.doesNotMatch(said[0], /team-b-/, "the namespaces it could not review are not named");
  v.forgetConfig("team-a/t");
  await v.of([team], "team-b-1");
  assert.equal(said.length, 2, "said again once the SyncConfig changed");
});

Deno.test("DelegatedView.contests: a team that may not delete the object switches nothing off", async () => {
  const { v } = view([
    "team-a/a get namespaces team-b-1/team-b-1",
    "team-b/b get namespaces team-b-1/team-b-1",
    "team-a/a get configmaps team-b-1/*",
    "team-b/b get configmaps team-b-1/*",
    "team-b/b create configmaps team-b-1/*",
    "team-b/b update configmaps team-b-1/*",
  ]);
  const configs = [
    compiled("team-a", "a", { deleteItems: [delCm("shared")] }),
    compiled("team-b", "b", { syncItems: [cm("shared")] }),
  ];
  const seen = await v.of(configs, "team-b-1");
  assert.deepEqual((await v.contests(seen, "team-b-1")).size, 0);
});

Deno.test("DelegatedView.contests: a team that may delete contests, and the holder keeps the object", async () => {
  const rights = [
    "team-a/a get namespaces team-b-1/team-b-1",
    "team-b/b get namespaces team-b-1/team-b-1",
    "team-a/a get configmaps team-b-1/*",
    "team-a/a delete configmaps team-b-1/*",
    "team-b/b get configmaps team-b-1/*",
    "team-b/b create configmaps team-b-1/*",
    "team-b/b update configmaps team-b-1/*",
  ];
  const configs = [
    compiled("team-a", "a", { deleteItems: [delCm("shared")] }),
    compiled("team-b", "b", { syncItems: [cm("shared")] }),
  ];
  const tie = view(rights);
  const both = await tie.v.contests(await tie.v.of(configs, "team-b-1"), "team-b-1");
  assert.deepEqual([...both.keys()].sort(), ["team-a/a", "team-b/b"], "no holder: neither");
  const held = view(rights, { owner: "team-b/b" });
  const kept = await held.v.contests(await held.v.of(configs, "team-b-1"), "team-b-1");
  assert.deepEqual([...kept.keys()], ["team-a/a"], "the holder's item goes on");
  assert.match(kept.get("team-a/a")!.get(".spec.deleteItems[0]")!.problem, /and holds it/);
});
