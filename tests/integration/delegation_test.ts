/**
 * One identity per SyncConfig (lib/model/identity.ts), against the real API server with the audit log as witness: a
 * SyncConfig that names a ServiceAccount of its namespace writes as it (impersonated: `user` is espejo,
 * `impersonatedUser` the ServiceAccount, with the extra naming the SyncConfig), gets exactly the ServiceAccount's
 * rights, and fails, naming it, where it has none; delegated mode makes a SyncConfig outside the trusted namespaces
 * without one Invalid; a team cannot borrow another namespace's ServiceAccount. What a hostile team cannot switch off
 * or learn is tests/integration/delegation_hostile_test.ts.
 */
import assert from "node:assert/strict";
import type { HttpKubeClient } from "../../lib/kube/client.ts";
import type { AuditEvent } from "../../testenv/controlplane.ts";
import { createTeam, delegationFor, grantServiceAccount, type Team } from "../../testenv/delegation.ts";
import {
  auditNow,
  condition,
  counterValue,
  eventsOf,
  getObject,
  type RunningController,
  startController,
  statusOf,
  type SyncConfigStatusView,
} from "../../testenv/harness.ts";
import { auditEvents, clientFor, eventually, type TestCluster, testCluster } from "../../testenv/shared.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };
const SC_API = "/apis/sync.appuio.ch/v1alpha1";
const RBAC_API = "/apis/rbac.authorization.k8s.io/v1";
const WRITES = new Set(["create", "update", "patch", "delete"]);

/** The user a request was authorized as: the impersonated one, else the authenticated one. */
const effectiveUser = (e: AuditEvent) => e.impersonatedUser?.username ?? e.user.username;

/** Creates SyncConfig `namespace/name` with `annotations`. */
async function createSyncConfig(
  admin: HttpKubeClient,
  namespace: string,
  name: string,
  spec: unknown,
  annotations: Record<string, string> = {},
): Promise<void> {
  await admin.request({
    method: "POST",
    path: `${SC_API}/namespaces/${namespace}/syncconfigs`,
    body: { apiVersion: "sync.appuio.ch/v1alpha1", kind: "SyncConfig", metadata: { name, annotations }, spec },
  });
}

const asWriter = { "sync.appuio.ch/service-account": "writer" };
const configMap = (name: string, data: Record<string, string>, extra: Record<string, unknown> = {}) => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name },
  data,
  ...extra,
});
const viewBinding = {
  apiVersion: "rbac.authorization.k8s.io/v1",
  kind: "RoleBinding",
  metadata: { name: "team-view" },
  roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "view" },
  subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "Group", name: "team-devs" }],
};

/**
 * The controller's writes in `namespaces` since `since`, as the audit log has them. The test's own writes (as the
 * admin) are left out: `since` reaches a millisecond back, so a setup write just before it can fall inside (CI saw
 * the legacy ConfigMap's create counted as espejo's once).
 */
async function writesIn(c: TestCluster, namespaces: string[], since: string): Promise<AuditEvent[]> {
  const wanted = new Set(namespaces);
  return (await auditEvents(c)).filter((e) =>
    e.requestReceivedTimestamp >= since && WRITES.has(e.verb) && wanted.has(e.objectRef?.namespace ?? "") &&
    effectiveUser(e) !== c.admin.username
  );
}

/** Runs `body` with a team and a controller reading the team's namespace. */
async function withTeam(
  c: TestCluster,
  count: number,
  allowed: number,
  controller: { trusted?: (team: Team) => string[]; pruneDefault?: boolean },
  body: (team: Team, ctl: RunningController, admin: HttpKubeClient) => Promise<void>,
): Promise<void> {
  const admin = clientFor(c);
  const team = await createTeam(admin, count, allowed);
  const ctl = await startController(c, {
    watchNamespace: team.namespace,
    reconcileIntervalMs: 1000,
    trustedNamespaces: controller.trusted?.(team),
    pruneDefault: controller.pruneDefault,
  });
  const undelegate = await delegationFor(admin, ctl.identity, team.label);
  try {
    await body(team, ctl, admin);
  } finally {
    await ctl.stop();
    await undelegate();
    admin.close();
  }
}

/** Returns once two interval passes have ended after the call. */
async function twoPasses(ctl: RunningController): Promise<void> {
  const ended = () => counterValue(ctl.metrics, "espejo_last_full_pass_timestamp_seconds");
  let last = await ended();
  for (let i = 0; i < 2; i++) {
    const before = last;
    last = await eventually(
      async () => {
        const now = await ended();
        return now > before ? now : undefined;
      },
      30_000,
      `interval pass ${i + 1} of 2 to end`,
    );
  }
}

/** Every condition's message of a status, one per line (the Errored condition carries the failures). */
const messages = (s: SyncConfigStatusView) => (s.conditions ?? []).map((c) => c.message ?? "").join("\n");

/** Merge-patches SyncConfig `namespace/name` (the controller writes its status meanwhile: no version to race). */
async function patchSyncConfig(admin: HttpKubeClient, namespace: string, name: string, patch: unknown) {
  await admin.request({
    method: "PATCH",
    path: `${SC_API}/namespaces/${namespace}/syncconfigs/${name}`,
    contentType: "application/merge-patch+json",
    body: patch,
  });
}

/** The status once `check` holds for it. */
function statusWhen(
  admin: HttpKubeClient,
  team: Team,
  name: string,
  check: (s: SyncConfigStatusView) => boolean,
  what: string,
): Promise<SyncConfigStatusView> {
  return eventually(
    async () => {
      const s = await statusOf(admin, team.namespace, name);
      return check(s) ? s : undefined;
    },
    60_000,
    what,
  );
}

Deno.test(
  "delegation: a SyncConfig writes as its ServiceAccount, in 3 of 5 namespaces, and never as espejo; a namespace it " +
    "may see but not write fails there, one it may not see is not named",
  opts,
  async () => {
    const c = await testCluster();
    await withTeam(c, 5, 3, { trusted: () => ["espejo-system"] }, async (team, ctl, admin) => {
      // The fourth namespace the ServiceAccount may get (view of the namespace itself), but not write to; the fifth
      // it may not even get: that one is out of the SyncConfig's view (lib/sync/delegated_view.ts).
      const [seen, unseen] = team.targets.slice(3);
      await grantServiceAccount(admin, { namespace: team.namespace, name: "writer" }, "see-namespace", [seen], [
        { apiGroups: [""], resources: ["namespaces"], verbs: ["get"] },
      ]);
      const since = auditNow();
      await createSyncConfig(admin, team.namespace, "defaults", {
        namespaceSelector: { labelSelector: { matchLabels: { [team.label]: "yes" } } },
        syncItems: [configMap("team-settings", { owner: team.namespace }), viewBinding],
      }, asWriter);
      const s = await statusWhen(
        admin,
        team,
        "defaults",
        (s) => s.synchronizedItemCount === 6 && s.failedItemCount === 2,
        "6 items synced (3 namespaces) and 2 failed (the namespace it may see only)",
      );
      for (const ns of team.targets.slice(0, 3)) {
        assert.ok(await getObject(admin, `/api/v1/namespaces/${ns}/configmaps/team-settings`), ns);
        assert.ok(await getObject(admin, `${RBAC_API}/namespaces/${ns}/rolebindings/team-view`), ns);
      }
      for (const ns of [seen, unseen]) {
        assert.equal(await getObject(admin, `/api/v1/namespaces/${ns}/configmaps/team-settings`), undefined, ns);
      }
      // The status says who lacks what, in the API server's words, and who grants it; of the unseen namespace,
      // nothing.
      const message = messages(s);
      assert.match(message, new RegExp(`User "${team.writer}" cannot get resource "(configmaps|rolebindings)"`));
      assert.match(message, /the SyncConfig writes as ServiceAccount [^ ]+\/writer: grant it with a RoleBinding/);
      const events = await eventually(
        async () => (await eventsOf(admin, team.namespace, "defaults")).filter((e) => e.type === "Warning"),
        30_000,
        "a Warning Event on the SyncConfig",
      );
      assert.ok(events.some((e) => e.message.includes(`User "${team.writer}" cannot get`)), "the Event names it");
      assert.doesNotMatch(JSON.stringify({ s, events }), new RegExp(unseen), "the unseen namespace is not named");
      // Every write in the target namespaces was authorized as the ServiceAccount, sent by espejo, naming the
      // SyncConfig; none as espejo itself, and none where the ServiceAccount may not read.
      const writes = await writesIn(c, team.targets, since);
      assert.ok(writes.length >= 6, `6 creates at least, got ${writes.length}`);
      for (const e of writes) {
        assert.equal(effectiveUser(e), team.writer, `${e.verb} ${e.requestURI}`);
        assert.equal(e.user.username, ctl.identity.username, "sent by espejo");
        assert.deepEqual(e.impersonatedUser?.extra?.["sync.appuio.ch/syncconfig"], [`${team.namespace}/defaults`]);
        assert.ok(!["", seen, unseen].includes(e.objectRef?.namespace ?? ""), `${e.verb} ${e.requestURI}`);
      }
      // Converged: passes send nothing, not even reviews of the refused rights (a verdict stands five minutes).
      const quiet = auditNow();
      await twoPasses(ctl);
      const after = (await auditEvents(c)).filter((e) =>
        e.requestReceivedTimestamp >= quiet && e.user.username === ctl.identity.username && e.verb !== "watch" &&
        !["syncconfigs", "events", "leases"].includes(e.objectRef?.resource ?? "")
      );
      assert.deepEqual(after.map((e) => `${e.verb} ${e.requestURI}`), [], "no request in two steady passes");
    });
  },
);

Deno.test(
  "delegation: pruning, deleteItems and forceRecreate as the ServiceAccount",
  opts,
  async () => {
    const c = await testCluster();
    await withTeam(c, 1, 1, { pruneDefault: true }, async (team, ctl, admin) => {
      const [ns] = team.targets;
      const cmPath = (name: string) => `/api/v1/namespaces/${ns}/configmaps/${name}`;
      await admin.request({
        method: "POST",
        path: `/api/v1/namespaces/${ns}/configmaps`,
        body: configMap("legacy", { old: "yes" }),
      });
      const since = auditNow();
      const spec = (value: string, extra: unknown[] = []) => ({
        namespaceSelector: { matchNames: [ns] },
        forceRecreate: true,
        syncItems: [configMap("frozen", { value }, { immutable: true }), ...extra],
        deleteItems: [{ apiVersion: "v1", kind: "ConfigMap", name: "legacy" }],
      });
      await createSyncConfig(admin, team.namespace, "lifecycle", spec("1", [configMap("extra", { a: "1" })]), asWriter);
      await eventually(async () => (await getObject(admin, cmPath("legacy"))) === undefined, 60_000, "legacy deleted");
      const first = await eventually(() => getObject(admin, cmPath("frozen")), 60_000, "frozen created");
      await eventually(() => getObject(admin, cmPath("extra")), 60_000, "extra created");
      // An immutable ConfigMap changed: the update is refused as invalid, and forceRecreate replaces it.
      // And without the extra item: pruned. (A merge patch replaces the lists whole.)
      await patchSyncConfig(admin, team.namespace, "lifecycle", { spec: spec("2") });
      await eventually(
        async () => {
          const o = await getObject(admin, cmPath("frozen"));
          return o?.data?.value === "2" && o.metadata?.uid !== first.metadata?.uid;
        },
        60_000,
        "frozen replaced",
      );
      await eventually(async () => (await getObject(admin, cmPath("extra"))) === undefined, 60_000, "extra pruned");
      const writes = await writesIn(c, [ns], since);
      const did = (verb: string, name: string) =>
        writes.some((e) => e.verb === verb && e.objectRef?.name === name && (e.responseStatus?.code ?? 0) < 300);
      assert.ok(did("delete", "legacy"), "the deleteItem");
      assert.ok(did("delete", "frozen") && did("create", "frozen"), "the replace");
      assert.ok(did("delete", "extra"), "the prune");
      for (const e of writes) assert.equal(effectiveUser(e), team.writer, `${e.verb} ${e.requestURI}`);
      // Deleted: what it created is pruned as the ServiceAccount, and its finalizer removed by espejo.
      const deleting = auditNow();
      await admin.request({ method: "DELETE", path: `${SC_API}/namespaces/${team.namespace}/syncconfigs/lifecycle` });
      await eventually(async () => (await getObject(admin, cmPath("frozen"))) === undefined, 60_000, "frozen pruned");
      const prunes = await writesIn(c, [ns], deleting);
      assert.ok(prunes.some((e) => e.verb === "delete" && e.objectRef?.name === "frozen"));
      for (const e of prunes) assert.equal(effectiveUser(e), team.writer, `${e.verb} ${e.requestURI}`);
      await eventually(
        async () => !(await getObject(admin, `${SC_API}/namespaces/${team.namespace}/syncconfigs/lifecycle`)),
        30_000,
        "the SyncConfig released",
      );
      const finalizer = (await auditEvents(c)).filter((e) =>
        e.requestReceivedTimestamp >= deleting && e.verb === "patch" && e.objectRef?.resource === "syncconfigs"
      );
      assert.ok(finalizer.length >= 1, "the finalizer was removed");
      for (const e of finalizer) assert.equal(effectiveUser(e), ctl.identity.username, "espejo's own bookkeeping");
    });
  },
);

Deno.test(
  "delegation: delegated mode makes a SyncConfig without a ServiceAccount outside the trusted namespaces Invalid",
  opts,
  async () => {
    const c = await testCluster();
    await withTeam(c, 2, 2, { trusted: () => ["espejo-system"] }, async (team, ctl, admin) => {
      const since = auditNow();
      await createSyncConfig(admin, team.namespace, "unsigned", {
        namespaceSelector: { labelSelector: { matchLabels: { [team.label]: "yes" } } },
        syncItems: [configMap("x", { a: "1" })],
      });
      const s = await statusWhen(
        admin,
        team,
        "unsigned",
        (s) => condition(s, "Invalid")?.status === "True",
        "Invalid",
      );
      assert.match(
        condition(s, "Invalid")?.message ?? "",
        new RegExp(
          `^SyncConfig ${team.namespace}/unsigned: names no ServiceAccount to write as, and its namespace ` +
            `${team.namespace} is not trusted \\(--trusted-namespaces espejo-system\\): annotate it with ` +
            "sync\\.appuio\\.ch/service-account: <name>",
        ),
      );
      assert.equal(
        await counterValue(ctl.metrics, "espejo_syncconfig_invalid", {
          syncconfig: `${team.namespace}/unsigned`,
        }),
        1,
      );
      // Annotated, it syncs, as the ServiceAccount.
      await patchSyncConfig(admin, team.namespace, "unsigned", { metadata: { annotations: asWriter } });
      await statusWhen(admin, team, "unsigned", (s) => s.synchronizedItemCount === 2, "synced once annotated");
      const writes = await writesIn(c, team.targets, since);
      assert.ok(writes.length >= 2);
      for (const e of writes) assert.equal(effectiveUser(e), team.writer, "nothing was written while Invalid");
    });
  },
);

Deno.test(
  "delegation: a SyncConfig cannot name a ServiceAccount of another namespace",
  opts,
  async () => {
    const c = await testCluster();
    await withTeam(c, 1, 1, {}, async (team, _ctl, admin) => {
      const since = auditNow();
      const borrowed = ["kube-system:generic-garbage-collector", "kube-system/namespace-controller"];
      for (const [i, name] of borrowed.entries()) {
        await createSyncConfig(admin, team.namespace, `borrow-${i}`, {
          namespaceSelector: { matchNames: team.targets },
          syncItems: [configMap(`borrowed-${i}`, { a: "1" })],
        }, { "sync.appuio.ch/service-account": name });
      }
      for (const i of borrowed.keys()) {
        const s = await statusWhen(
          admin,
          team,
          `borrow-${i}`,
          (s) => condition(s, "Invalid")?.status === "True",
          `borrow-${i} Invalid`,
        );
        assert.match(condition(s, "Invalid")?.message ?? "", /a ServiceAccount of another namespace cannot be named/);
      }
      assert.deepEqual(await writesIn(c, team.targets, since), [], "nothing written");
    });
  },
);

Deno.test(
  "delegation: status and Events tell only what the ServiceAccount was told",
  opts,
  async () => {
    const c = await testCluster();
    await withTeam(c, 2, 1, {}, async (team, _ctl, admin) => {
      const forbidden = team.targets[1];
      // An object the ServiceAccount may not read, under the name of the team's item, with content of its own.
      await admin.request({
        method: "POST",
        path: `/api/v1/namespaces/${forbidden}/configmaps`,
        body: {
          ...configMap("probe", { secret: "s3cr3t-value" }),
          metadata: { name: "probe", annotations: { note: "private-annotation" }, labels: { tier: "private-label" } },
        },
      });
      await createSyncConfig(admin, team.namespace, "curious", {
        namespaceSelector: { matchNames: team.targets },
        syncItems: [configMap("probe", { mine: "1" })],
      }, asWriter);
      const s = await statusWhen(
        admin,
        team,
        "curious",
        (s) => s.synchronizedItemCount === 1 && s.failedItemCount === 1,
        "one synced, one refused",
      );
      const events = await eventsOf(admin, team.namespace, "curious");
      const told = JSON.stringify({ s, events: events.map((e) => e.message) });
      assert.match(told, new RegExp(`User \\\\"${team.writer}\\\\" cannot create resource \\\\"configmaps\\\\"`));
      for (const secret of ["s3cr3t-value", "private-annotation", "private-label"]) {
        assert.ok(!told.includes(secret), `${secret} leaked into status or Events`);
      }
      assert.equal(
        (await getObject(admin, `/api/v1/namespaces/${forbidden}/configmaps/probe`))?.data?.secret,
        "s3cr3t-value",
        "the object is untouched",
      );
    });
  },
);
