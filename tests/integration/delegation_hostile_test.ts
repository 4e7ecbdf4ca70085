/**
 * Delegated mode against hostile teams (docs/threat-model.md, "Team SyncConfig authors"), as the issue found them: the
 * controller as it ships, inside the Go espejo's limits (100M, 30 % of a CPU), with `--trusted-namespaces
 * espejo-system` and WATCH_NAMESPACE empty, on a control plane of its own (it reads every namespace's SyncConfigs,
 * which would be the other tests'). Teams are ServiceAccounts with Roles in some namespaces; the hostile teams' authors
 * write their SyncConfigs with tokens of their own; the audit log is the witness of what was sent as whom.
 *
 * - A team cannot switch off another SyncConfig's item where its ServiceAccount has no right: not a team's, not the
 *   platform's (which names a ServiceAccount of its own and still outranks every team); the holder of an object keeps
 *   it against a team that may delete it.
 * - A team learns nothing its ServiceAccount could not read: deleteItems in a namespace where it may get the namespace
 *   but not the objects fail alike for present and absent objects; namespaces it may not get are not named, counted
 *   or written to, whatever labels select them.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { HttpKubeClient } from "../../lib/kube/client.ts";
import { Cgroup } from "../../testenv/cgroup.ts";
import { ControllerProcess } from "../../testenv/controller_process.ts";
import { type AuditEvent, ControlPlane, freePorts, kubeconfigYaml } from "../../testenv/controlplane.ts";
import { delegationFor, grantServiceAccount, type Rules } from "../../testenv/delegation.ts";
import { espejoIdentity, optIn } from "../../testenv/espejo_rbac.ts";
import {
  createNamespace,
  createSyncConfig,
  eventsOf,
  getObject,
  statusOf,
  type SyncConfigStatusView,
} from "../../testenv/harness.ts";
import { createTenant } from "../../testenv/tenant.ts";
import { auditEvents, clientFor, eventually, installBase, type TestCluster } from "../../testenv/shared.ts";
import { Rng } from "../game/rng.ts";
import { type Played, TEAM_MOVES, type TeamWorld } from "../game/team_moves.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };
/** The team moves' seeds (tests/game/team_moves.ts): between them every move, each several times. */
export const GAME_SEEDS = [11, 12];
const MOVES_PER_GAME = 6;
const PLATFORM = "espejo-system";

const CONFIGMAPS: Rules = [{
  apiGroups: [""],
  resources: ["configmaps"],
  verbs: ["get", "create", "update", "delete"],
}];
const SEE_NAMESPACE: Rules = [{ apiGroups: [""], resources: ["namespaces"], verbs: ["get"] }];

const configMap = (name: string, data: Record<string, string>) => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name },
  data,
});
const cmPath = (ns: string, name: string) => `/api/v1/namespaces/${ns}/configmaps/${name}`;

/** The annotation a SyncConfig of each team carries: it writes as ServiceAccount `name` of its namespace. */
const writesAs = (name: string) => ({ "sync.appuio.ch/service-account": name });

/** A failure's message with the item, the object's name and its kind taken out: what is left must not tell them apart. */
const shapeOf = (message: string) =>
  message.replace(/\.spec\.deleteItems\[\d+\]/g, "ITEM").replace(/(exists|absent)-(secret|cm)/g, "NAME")
    .replace(/Secret|ConfigMap/g, "KIND").replace(/secrets|configmaps/g, "RESOURCE");

/** Every condition's message of a status, one per line. */
const messages = (s: SyncConfigStatusView) => (s.conditions ?? []).map((c) => c.message ?? "").join("\n");

/** The requests authorized as `username` (impersonated by espejo) in `namespaces` since `since`. */
async function sentAs(c: TestCluster, username: string, namespaces: string[], since: string): Promise<AuditEvent[]> {
  return (await auditEvents(c)).filter((e) =>
    e.requestReceivedTimestamp >= since && e.impersonatedUser?.username === username &&
    namespaces.includes(e.objectRef?.namespace ?? "")
  );
}

Deno.test(
  "delegated mode inside 100M/30 %: a hostile team switches off no other SyncConfig's item and learns nothing its " +
    "ServiceAccount cannot read",
  opts,
  async (t) => {
    // A control plane of its own: this espejo reads the SyncConfigs of every namespace.
    const cp = await ControlPlane.start({ audit: true, log: () => {} });
    const c: TestCluster = { server: cp.server, caPem: cp.caPem, admin: cp.admin, auditLogPath: cp.auditLogPath };
    const admin = clientFor(c);
    const dir = await Deno.makeTempDir({ prefix: "espejo-delegation-hostile-" });
    const cgroup = await Cgroup.create(`espejo-hostile-${crypto.randomUUID().slice(0, 8)}`, "100M", 0.3);
    let ctl: ControllerProcess | undefined;
    const authors = new Map<string, HttpKubeClient>();
    try {
      await installBase(cp.client());
      const espejo = await espejoIdentity(admin, PLATFORM);
      await optIn(admin, "events-in-every-namespace");
      await delegationFor(admin, espejo, "hostile");
      // Team b: its SyncConfig in team-b writes into team-b-1 and team-b-2 (selected by a label of team b's).
      // Team a: rights in team-a-1 only. Team c: may get every namespace (as many clusters let everyone), no more.
      // The platform: a SyncConfig in espejo-system that names a ServiceAccount of its own, with rights everywhere.
      for (const ns of ["team-a", "team-b", "team-c", "team-a-1"]) await createNamespace(admin, ns);
      for (const ns of ["team-b-1", "team-b-2"]) await createNamespace(admin, ns, { "team-b.example/tenant": "yes" });
      await createNamespace(admin, "customer-x", { "customer.example/vip": "true" });
      await grantServiceAccount(admin, { namespace: "team-b", name: "writer" }, "writer", ["team-b-1", "team-b-2"], [
        ...CONFIGMAPS,
        ...SEE_NAMESPACE,
      ]);
      await grantServiceAccount(admin, { namespace: "team-a", name: "writer" }, "writer", ["team-a-1"], [
        ...CONFIGMAPS,
        ...SEE_NAMESPACE,
      ]);
      await grantServiceAccount(admin, { namespace: "team-c", name: "writer" }, "team-c-sees-namespaces", "cluster", [
        ...SEE_NAMESPACE,
      ]);
      await grantServiceAccount(admin, { namespace: PLATFORM, name: "platform-writer" }, "platform-writer", "cluster", [
        ...CONFIGMAPS,
        ...SEE_NAMESPACE,
      ]);
      // The hostile teams' authors act with tokens of their own: a ServiceAccount that may write SyncConfigs (and, as
      // createTenant waits on it, ConfigMaps) in its team's namespace, nothing else.
      for (const team of ["team-a", "team-c"]) {
        const author = await createTenant(c, admin, team, {
          rules: [
            { apiGroups: [""], resources: ["configmaps"] },
            { apiGroups: ["sync.appuio.ch"], resources: ["syncconfigs"] },
          ],
        });
        authors.set(team, author.client);
      }

      const kubeconfig = join(dir, "kubeconfig");
      await Deno.writeTextFile(kubeconfig, kubeconfigYaml(c.server, c.caPem, espejo));
      const [healthPort] = await freePorts(1);
      ctl = new ControllerProcess(cgroup, kubeconfig, healthPort, join(dir, "controller.log"), "", [
        "--reconcile-interval=2s",
        `--trusted-namespaces=${PLATFORM}`,
      ]);
      await ctl.start();

      await createSyncConfig(admin, "team-b", "settings", {
        namespaceSelector: { labelSelector: { matchLabels: { "team-b.example/tenant": "yes" } } },
        syncItems: [configMap("b-settings", { team: "b" })],
      }, writesAs("writer"));
      await createSyncConfig(admin, PLATFORM, "platform", {
        namespaceSelector: { matchNames: ["team-.*"] },
        syncItems: [configMap("platform-info", { from: "platform" })],
      }, writesAs("platform-writer"));
      for (const ns of ["team-b-1", "team-b-2"]) {
        for (const name of ["b-settings", "platform-info"]) {
          await eventually(() => getObject(admin, cmPath(ns, name)), 60_000, `${name} in ${ns}`);
        }
      }

      await t.step("a team without rights switches off neither a team's item nor the platform's", async () => {
        const since = new Date().toISOString();
        await createSyncConfig(authors.get("team-a")!, "team-a", "veto", {
          namespaceSelector: { matchNames: ["team-.*"] },
          deleteItems: [
            { apiVersion: "v1", kind: "ConfigMap", name: "b-settings" },
            { apiVersion: "v1", kind: "ConfigMap", name: "platform-info" },
          ],
        }, writesAs("writer"));
        // Its own namespace team-a-1 is the only one it sees: there b-settings is absent, and the platform's item,
        // which team a's ServiceAccount may delete there, outranks its deleteItem.
        const veto = await eventually(
          async () => {
            await ctl!.alive();
            const s = await statusOf(admin, "team-a", "veto");
            return s.failedItemCount === 1 ? s : undefined;
          },
          60_000,
          "the veto's status",
        );
        assert.equal(veto.deletedItemCount ?? 0, 0);
        assert.match(
          messages(veto),
          /\.spec\.deleteItems\[1\] \(ConfigMap platform-info\) in namespace team-a-1: contradicts an item of a SyncConfig of a trusted namespace, which syncs the same object: a SyncConfig of a trusted namespace outranks this one/,
        );
        assert.ok(await getObject(admin, cmPath("team-a-1", "platform-info")), "the platform's item stays");
        // A deleted copy is restored, and a new namespace of team b gets both, as if the veto were not there.
        for (const name of ["b-settings", "platform-info"]) {
          await admin.request({ method: "DELETE", path: cmPath("team-b-1", name) });
        }
        await createNamespace(admin, "team-b-3", { "team-b.example/tenant": "yes" });
        await grantServiceAccount(admin, { namespace: "team-b", name: "writer" }, "writer", ["team-b-3"], [
          ...CONFIGMAPS,
          ...SEE_NAMESPACE,
        ]);
        for (const ns of ["team-b-1", "team-b-3"]) {
          for (const name of ["b-settings", "platform-info"]) {
            await eventually(
              async () => {
                await ctl!.alive();
                return await getObject(admin, cmPath(ns, name));
              },
              60_000,
              `${name} in ${ns}, restored or created despite the veto`,
            );
          }
        }
        const b = await statusOf(admin, "team-b", "settings");
        assert.equal(b.failedItemCount, 0, messages(b));
        // Nothing was sent as team a's ServiceAccount into team b's namespaces, and nothing told it they exist.
        const teamA = "system:serviceaccount:team-a:writer";
        assert.deepEqual(await sentAs(c, teamA, ["team-b-1", "team-b-2", "team-b-3"], since), []);
        const told = JSON.stringify({ veto, events: await eventsOf(admin, "team-a", "veto") });
        assert.doesNotMatch(told, /team-b-\d/, "team a is told nothing of team b's namespaces");
      });

      await t.step(
        "deleteItems where the ServiceAccount may not read fail alike, whether the object exists",
        async () => {
          await admin.request({
            method: "POST",
            path: "/api/v1/namespaces/team-b-1/secrets",
            body: { apiVersion: "v1", kind: "Secret", metadata: { name: "exists-secret" }, stringData: { a: "b" } },
          });
          await admin.request({
            method: "POST",
            path: "/api/v1/namespaces/team-b-1/configmaps",
            body: configMap("exists-cm", { a: "b" }),
          });
          await createSyncConfig(authors.get("team-c")!, "team-c", "probe", {
            namespaceSelector: { matchNames: ["team-b-1"] },
            deleteItems: [
              { apiVersion: "v1", kind: "Secret", name: "exists-secret" },
              { apiVersion: "v1", kind: "ConfigMap", name: "exists-cm" },
              { apiVersion: "v1", kind: "Secret", name: "absent-secret" },
              { apiVersion: "v1", kind: "ConfigMap", name: "absent-cm" },
            ],
          }, writesAs("writer"));
          const s = await eventually(
            async () => {
              await ctl!.alive();
              const s = await statusOf(admin, "team-c", "probe");
              return s.failedItemCount === 4 ? s : undefined;
            },
            60_000,
            "all four deleteItems failed",
          );
          assert.equal(s.deletedItemCount ?? 0, 0, "none is called done");
          // The four failures read alike but for the object's name: what the API server would say for each.
          const failures = await eventually(
            async () => {
              const events = (await eventsOf(admin, "team-c", "probe")).filter((e) => e.type === "Warning");
              return events.length >= 4 ? events.map((e) => e.message) : undefined;
            },
            30_000,
            "the four failures as Events",
          );
          const shapes = new Set(
            failures.map((m) =>
              m.replace(/\.spec\.deleteItems\[\d\]/g, "ITEM").replace(/(exists|absent)-(secret|cm)/g, "NAME")
                .replace(/Secret|ConfigMap/g, "KIND").replace(/secrets|configmaps/g, "RESOURCE")
            ),
          );
          assert.equal(shapes.size, 1, `the failures differ beyond the name: ${failures.join("\n")}`);
          assert.match(failures[0], /may neither get nor delete the object/);
          for (const name of ["exists-secret", "exists-cm"]) {
            const kind = name.endsWith("secret") ? "secrets" : "configmaps";
            assert.ok(await getObject(admin, `/api/v1/namespaces/team-b-1/${kind}/${name}`), `${name} is untouched`);
          }
        },
      );

      await t.step("a label selector does not tell a team which namespaces carry a label it cannot read", async () => {
        await createSyncConfig(authors.get("team-a")!, "team-a", "label-probe", {
          namespaceSelector: { labelSelector: { matchLabels: { "customer.example/vip": "true" } } },
          syncItems: [configMap("probe", { a: "1" })],
        }, writesAs("writer"));
        // Its own namespace, labelled the same afterwards, is synced: the probe works where the team may look.
        await admin.request({
          method: "PATCH",
          path: "/api/v1/namespaces/team-a-1",
          contentType: "application/merge-patch+json",
          body: { metadata: { labels: { "customer.example/vip": "true" } } },
        });
        const s = await eventually(
          async () => {
            await ctl!.alive();
            const s = await statusOf(admin, "team-a", "label-probe");
            return s.synchronizedItemCount === 1 ? s : undefined;
          },
          60_000,
          "synced in team-a-1 only",
        );
        assert.equal(s.failedItemCount ?? 0, 0, messages(s));
        const told = JSON.stringify({ s, events: await eventsOf(admin, "team-a", "label-probe") });
        assert.doesNotMatch(told, /customer-x/, "the namespace that carries the label is not named");
        assert.equal(await getObject(admin, cmPath("customer-x", "probe")), undefined, "nor written to");
      });

      await t.step(
        "a seeded game of team moves: contesting deleteItems, fresh selector keys, existence probes",
        async () => {
          const world: TeamWorld = {
            teams: [
              { namespace: "team-a", seesVictims: false, author: authors.get("team-a")! },
              { namespace: "team-c", seesVictims: true, author: authors.get("team-c")! },
            ],
            victimNamespaces: ["team-b-1", "team-b-2", "team-b-3"],
            victims: ["b-settings", "platform-info"],
            present: [{ kind: "Secret", name: "exists-secret" }, { kind: "ConfigMap", name: "exists-cm" }],
            absent: [{ kind: "Secret", name: "absent-secret" }, { kind: "ConfigMap", name: "absent-cm" }],
          };
          for (const seed of GAME_SEEDS) {
            const since = new Date().toISOString();
            const played: Played[] = [];
            for (let step = 0; step < MOVES_PER_GAME; step++) {
              const rng = Rng.derive(seed, step);
              played.push(await rng.pick(TEAM_MOVES).play(rng, world, seed * 100 + step));
            }
            // One victim copy deleted by hand: it must come back whatever the teams asked.
            const rng = Rng.derive(seed, MOVES_PER_GAME);
            const [ns, victim] = [rng.pick(world.victimNamespaces), rng.pick(world.victims)];
            await admin.request({ method: "DELETE", path: cmPath(ns, victim) });
            const moves = played.map((p, i) => `${i}: ${p.words}`).join("\n");
            await eventually(
              async () => {
                await ctl!.alive();
                for (const ns of world.victimNamespaces) {
                  for (const name of world.victims) if (!(await getObject(admin, cmPath(ns, name)))) return false;
                }
                return true;
              },
              60_000,
              `seed ${seed}: every victim copy in place after the moves\n${moves}`,
            );
            for (const p of played) {
              const [namespace, name] = p.syncConfig.split("/");
              const s = await eventually(
                async () => {
                  const s = await statusOf(admin, namespace, name);
                  return (s.conditions ?? []).length ? s : undefined;
                },
                60_000,
                `seed ${seed}: a status for ${p.syncConfig}`,
              );
              const told = JSON.stringify({ s, events: await eventsOf(admin, namespace, name) });
              const seesVictims = world.teams.find((t) => t.namespace === namespace)!.seesVictims;
              if (!seesVictims) {
                assert.doesNotMatch(told, /team-b-\d/, `seed ${seed}: ${p.words} was told of team b's namespaces`);
              }
              if (!p.probe) continue;
              const probed = await eventually(
                async () => {
                  const s = await statusOf(admin, namespace, name);
                  return (s.failedItemCount ?? 0) === (p.seen ? p.probe!.length : 0) ? s : undefined;
                },
                60_000,
                `seed ${seed}: ${p.words}: ${p.seen ? "every item failed" : "nothing said"}`,
              );
              assert.equal(probed.deletedItemCount ?? 0, 0, `seed ${seed}: ${p.words}`);
              if (p.seen) {
                const failures = await eventually(
                  async () => {
                    const m = (await eventsOf(admin, namespace, name)).filter((e) => e.type === "Warning");
                    return m.length >= p.probe!.length ? m.map((e) => e.message) : undefined;
                  },
                  30_000,
                  `seed ${seed}: the probe's failures as Events`,
                );
                assert.equal(new Set(failures.map(shapeOf)).size, 1, `seed ${seed}: ${failures.join("\n")}`);
              }
            }
            for (const writer of ["system:serviceaccount:team-a:writer", "system:serviceaccount:team-c:writer"]) {
              const sent = (await sentAs(c, writer, world.victimNamespaces, since)).map((e) =>
                `${e.verb} ${e.requestURI}`
              );
              assert.deepEqual(sent, [], `seed ${seed}: requests as ${writer} in team b's namespaces\n${moves}`);
            }
            for (const { name } of world.present) {
              const kind = name.endsWith("secret") ? "secrets" : "configmaps";
              assert.ok(await getObject(admin, `/api/v1/namespaces/team-b-1/${kind}/${name}`), `seed ${seed}: ${name}`);
            }
          }
        },
      );

      await t.step(
        "a team's synced object is kept against another team that may delete it, even once deleted",
        async () => {
          // Team a may now delete ConfigMaps in team-b-2 (and see it), where team b's item syncs b-settings.
          await grantServiceAccount(admin, { namespace: "team-a", name: "writer" }, "team-a-writer", ["team-b-2"], [
            ...CONFIGMAPS,
            ...SEE_NAMESPACE,
          ]);
          await createSyncConfig(authors.get("team-a")!, "team-a", "contender", {
            namespaceSelector: { matchNames: ["team-b-2"] },
            deleteItems: [{ apiVersion: "v1", kind: "ConfigMap", name: "b-settings" }],
          }, writesAs("writer"));
          // Until team a's reviews are answered (its earlier SyncConfigs may have spent its pace) its item waits;
          // then it fails for good, the syncItem kept.
          const kept =
            /contradicts an item of another SyncConfig, which syncs the same object: what a SyncConfig of an untrusted namespace syncs is kept against another's deleteItem/;
          const s = await eventually(
            async () => {
              await ctl!.alive();
              const s = await statusOf(admin, "team-a", "contender");
              return s.failedItemCount === 1 && kept.test(messages(s)) ? s : undefined;
            },
            60_000,
            "the contender's deleteItem fails, the other team's syncItem kept",
          );
          assert.doesNotMatch(messages(s), /team-b\/settings/, "the other team's SyncConfig is not named");
          // Deleted by hand (as team a's own ServiceAccount could): team b's copy comes back all the same; no marker
          // on the object, nor its absence, decides who keeps it.
          await admin.request({ method: "DELETE", path: cmPath("team-b-2", "b-settings") });
          await eventually(
            async () => {
              await ctl!.alive();
              return await getObject(admin, cmPath("team-b-2", "b-settings"));
            },
            60_000,
            "b-settings restored in team-b-2 despite the contender",
          );
          assert.equal((await statusOf(admin, "team-b", "settings")).failedItemCount, 0);
        },
      );
      await ctl.alive();
      assert.equal(await cgroup.oomKills(), 0, "no kill by the memory limit");
    } finally {
      await ctl?.stop();
      await cgroup.remove().catch(() => {});
      for (const author of authors.values()) author.close();
      admin.close();
      await cp.stop();
    }
  },
);
