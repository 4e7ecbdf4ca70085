/**
 * docs/delegation.md as people use it: each marked snippet (`<!-- delegation-snippet: NAME -->`) applied as written
 * with kubectl, or rendered with `kubectl kustomize` next to a checkout named `espejo`, as the page says. The team's
 * snippets sync team-a-dev and fail team-a-prod naming the ServiceAccount; narrowing delegation takes it away and a
 * RoleBinding in team-a gives it back; the delegated-mode overlay runs the controller as the page says it does.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { repoRoot } from "../../testenv/build.ts";
import { kubectl } from "../../testenv/kubectl.ts";
import { isAlreadyExists } from "../../lib/kube/errors.ts";
import type { HttpKubeClient } from "../../lib/kube/client.ts";
import { parseConfig } from "../../lib/app/config.ts";
import { getObject, startController, statusOf, type SyncConfigStatusView } from "../../testenv/harness.ts";
import { clientFor, eventually, type TestCluster, testCluster } from "../../testenv/shared.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };
const PAGE = join(repoRoot, "docs", "delegation.md");

/** The page's marked snippets by name. */
async function snippets(): Promise<Map<string, string>> {
  const text = await Deno.readTextFile(PAGE);
  const out = new Map<string, string>();
  for (const m of text.matchAll(/<!-- delegation-snippet: ([\w-]+) -->\s*\n```\w+\n([\s\S]*?)```/g)) {
    out.set(m[1], m[2]);
  }
  return out;
}

async function snippet(name: string): Promise<string> {
  const s = (await snippets()).get(name);
  assert.ok(s, `docs/delegation.md has no snippet ${name}`);
  return s;
}

/** Renders a kustomization snippet whose first line names its directory, beside a checkout called `espejo`. */
async function kustomize(name: string): Promise<Record<string, unknown>[]> {
  const text = await snippet(name);
  const dir = /^# ([\w-]+)\/kustomization\.yaml/.exec(text)?.[1];
  assert.ok(dir, `snippet ${name} names its directory in its first line`);
  const root = await Deno.makeTempDir();
  try {
    await Deno.symlink(repoRoot, join(root, "espejo"));
    await Deno.mkdir(join(root, dir));
    await Deno.writeTextFile(join(root, dir, "kustomization.yaml"), text);
    const out = await kubectl(undefined, ["kustomize", join(root, dir)]);
    return parseAllDocuments(out).map((d) => d.toJSON());
  } finally {
    await Deno.remove(root, { recursive: true });
  }
}

async function ensureNamespace(admin: HttpKubeClient, name: string): Promise<void> {
  await admin.request({
    method: "POST",
    path: "/api/v1/namespaces",
    body: { apiVersion: "v1", kind: "Namespace", metadata: { name } },
  }).catch((e) => {
    if (!isAlreadyExists(e)) throw e;
  });
}

const messages = (s: SyncConfigStatusView) => (s.conditions ?? []).map((c) => c.message ?? "").join("\n");

/** The status of team-a/team-defaults once `check` holds. */
function statusWhen(admin: HttpKubeClient, check: (s: SyncConfigStatusView) => boolean, what: string) {
  return eventually(
    async () => {
      const s = await statusOf(admin, "team-a", "team-defaults");
      return check(s) ? s : undefined;
    },
    60_000,
    what,
  );
}

/** A change of the SyncConfig's items: refused writes wait for one (they are terminal), and this is one. */
async function touch(c: TestCluster, value: string): Promise<void> {
  await kubectl(c, [
    "-n",
    "team-a",
    "patch",
    "syncconfig",
    "team-defaults",
    "--type=json",
    "-p",
    JSON.stringify([{ op: "replace", path: "/spec/syncItems/0/data/team", value }]),
  ]);
}

Deno.test(
  "docs/delegation.md: the team's snippets as written write as espejo-writer where its Role allows; narrowed " +
    "delegation refuses it until the RoleBinding of the page is applied",
  opts,
  async () => {
    const c = await testCluster();
    const admin = clientFor(c);
    for (const ns of ["team-a", "team-a-dev", "team-a-prod"]) await ensureNamespace(admin, ns);
    // deploy/'s espejo (espejo-system/espejo) reading team-a, in the delegated mode of the page.
    const ctl = await startController(c, {
      watchNamespace: "team-a",
      identityNamespace: "espejo-system",
      trustedNamespaces: ["espejo-system"],
      reconcileIntervalMs: 1000,
    });
    try {
      const optIn = /^kubectl apply -k (\S+)\s*$/.exec((await snippet("admin-opt-in")).trim());
      assert.ok(optIn, "the opt-in is one kubectl apply -k");
      await kubectl(c, ["apply", "-k", optIn[1]], { cwd: repoRoot });
      // In team-a-prod the team granted `view` only, as the page's error example says: the ServiceAccount may see the
      // namespace (and read ConfigMaps), not write there.
      await kubectl(c, [
        "-n",
        "team-a-prod",
        "create",
        "rolebinding",
        "espejo-writer-view",
        "--clusterrole=view",
        "--serviceaccount=team-a:espejo-writer",
      ]);
      for (const name of ["team-serviceaccount", "team-target-rbac", "team-syncconfig"]) {
        await kubectl(c, ["apply", "-f", "-"], { stdin: await snippet(name) });
      }
      const s = await statusWhen(
        admin,
        (s) => s.synchronizedItemCount === 2 && s.failedItemCount === 2,
        "team-a-dev synced (2 items), team-a-prod refused (2 items)",
      );
      const info = await getObject(admin, "/api/v1/namespaces/team-a-dev/configmaps/team-info");
      assert.deepEqual(info?.data, { team: "team-a", namespace: "team-a-dev" });
      assert.ok(
        await getObject(
          admin,
          "/apis/rbac.authorization.k8s.io/v1/namespaces/team-a-dev/rolebindings/team-a-developers-view",
        ),
      );
      // The error the page shows, as the status carries it.
      assert.match(
        messages(s),
        /User "system:serviceaccount:team-a:espejo-writer" cannot create resource "(configmaps|rolebindings)" in API group "[^"]*" in the namespace "team-a-prod"\); the SyncConfig writes as ServiceAccount team-a\/espejo-writer: grant it with a RoleBinding in namespace team-a-prod/,
      );

      // Narrowed: the overlay leaves the ServiceAccount ClusterRoleBinding out; without it espejo may not impersonate.
      const narrowed = await kustomize("admin-narrow-overlay");
      const bindings = narrowed.filter((o) => o.kind === "ClusterRoleBinding").map((o) =>
        (o.metadata as never)["name"]
      );
      assert.deepEqual(bindings.sort(), ["espejo-impersonate-syncconfig-extra", "espejo-review-delegated-rights"]);
      await kubectl(c, ["delete", "clusterrolebinding", "espejo-impersonate-serviceaccounts"]);
      await touch(c, "team-a, narrowed");
      const refused = await statusWhen(
        admin,
        (s) => messages(s).includes("cannot impersonate"),
        "espejo refused the impersonation",
      );
      assert.match(
        messages(refused),
        /espejo may not act as ServiceAccount team-a\/espejo-writer: the cluster admin grants it with kubectl apply -k deploy\/opt-in\/delegation/,
      );
      // The page's RoleBinding in team-a lets team-a delegate again.
      await kubectl(c, ["apply", "-f", "-"], { stdin: await snippet("admin-narrow-rolebinding") });
      await eventually(
        async () => {
          await touch(c, `team-a, ${Date.now()}`);
          const s = await statusOf(admin, "team-a", "team-defaults");
          return s.synchronizedItemCount === 2 && !messages(s).includes("cannot impersonate");
        },
        60_000,
        "synced again in team-a-dev after the RoleBinding",
      );
    } finally {
      await ctl.stop();
      // No espejo-system/espejo of another test keeps these rights. The ClusterRoles stay: tests running beside this
      // one bind them too (testenv/delegation.ts).
      const bindings = [
        "espejo-impersonate-serviceaccounts",
        "espejo-impersonate-syncconfig-extra",
        "espejo-review-delegated-rights",
      ];
      for (const binding of bindings) await kubectl(c, ["delete", "--ignore-not-found", "clusterrolebinding", binding]);
      await kubectl(c, ["-n", "team-a-prod", "delete", "--ignore-not-found", "rolebinding", "espejo-writer-view"]);
      await kubectl(c, [
        "-n",
        "team-a",
        "delete",
        "--ignore-not-found",
        "rolebinding",
        "espejo-impersonate-serviceaccounts",
      ]);
      admin.close();
    }
  },
);

Deno.test(
  "docs/delegation.md: the delegated-mode overlay runs espejo with --trusted-namespaces and an empty WATCH_NAMESPACE",
  opts,
  async () => {
    const objects = await kustomize("admin-delegated-mode");
    type Container = { args?: string[]; env?: { name: string; value?: string }[] };
    const deployment = objects.find((o) => o.kind === "Deployment") as
      | { spec: { template: { spec: { containers: Container[] } } } }
      | undefined;
    assert.ok(deployment, "the overlay renders deploy/'s Deployment");
    const container = deployment.spec.template.spec.containers[0];
    const env = Object.fromEntries((container.env ?? []).map((e) => [e.name, e.value ?? ""]));
    const config = parseConfig(container.args ?? [], env);
    assert.deepEqual(config.trustedNamespaces, ["espejo-system"]);
    assert.equal(config.watchNamespace, "", "every namespace's SyncConfigs are read");
    const names = objects.map((o) => `${o.kind}/${(o.metadata as { name: string }).name}`);
    for (
      const wanted of [
        "ClusterRoleBinding/espejo-impersonate-serviceaccounts",
        "ClusterRoleBinding/espejo-impersonate-syncconfig-extra",
        "ClusterRoleBinding/espejo-review-delegated-rights",
      ]
    ) {
      assert.ok(names.includes(wanted), `${wanted} in ${names.join(", ")}`);
    }
    assert.ok(names.some((n) => /events/i.test(n) && n.startsWith("ClusterRole")), "the Events opt-in is part of it");
  },
);

Deno.test(
  "docs/delegation.md: with the editors' ClusterRole a namespace admin may write SyncConfigs in its namespace",
  opts,
  async () => {
    const c = await testCluster();
    const admin = clientFor(c);
    await ensureNamespace(admin, "team-a");
    try {
      await kubectl(c, ["apply", "-f", "-"], { stdin: await snippet("admin-syncconfig-editors") });
      await kubectl(c, ["-n", "team-a", "create", "rolebinding", "alice-admin", "--clusterrole=admin", "--user=alice"]);
      await eventually(
        async () => {
          const out = await kubectl(c, [
            "auth",
            "can-i",
            "create",
            "syncconfigs.sync.appuio.ch",
            "-n",
            "team-a",
            "--as",
            "alice",
          ])
            .catch(() => "no");
          return out.trim() === "yes";
        },
        30_000,
        "alice may create SyncConfigs in team-a",
      );
      const elsewhere = await kubectl(c, [
        "auth",
        "can-i",
        "create",
        "syncconfigs.sync.appuio.ch",
        "-n",
        "espejo-system",
        "--as",
        "alice",
      ])
        .catch(() => "no");
      assert.equal(elsewhere.trim(), "no", "only where she is admin");
    } finally {
      await kubectl(c, ["-n", "team-a", "delete", "--ignore-not-found", "rolebinding", "alice-admin"]);
      admin.close();
    }
  },
);
