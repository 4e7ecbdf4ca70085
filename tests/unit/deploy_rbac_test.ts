/**
 * deploy/'s RBAC is least privilege: espejo's ServiceAccount gets Secrets and ServiceAccounts only through an opt-in
 * of deploy/opt-in/, and Events only in its own namespace, where its SyncConfigs are. Read from the files that
 * `kubectl apply -k` applies; tests/integration/rbac_test.ts asks the API server the same questions.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { repoRoot } from "../../testenv/build.ts";
import { OPT_IN_KINDS } from "../../lib/sync/missing_right.ts";
import { SYNCCONFIG_EXTRA } from "../../lib/model/identity.ts";

interface Rule {
  apiGroups?: string[];
  resources?: string[];
  verbs?: string[];
  nonResourceURLs?: string[];
}
interface Doc {
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  rules?: Rule[];
  aggregationRule?: { clusterRoleSelectors: { matchLabels: Record<string, string> }[] };
  roleRef?: { kind: string; name: string };
  subjects?: { kind: string; name: string; namespace?: string }[];
}

const AGGREGATE = "sync.appuio.ch/aggregate-to-espejo";
const VERBS = ["get", "list", "watch", "create", "update", "delete"];

const parse = (path: string): Doc[] =>
  parseAllDocuments(Deno.readTextFileSync(path)).map((d) => d.toJS() as Doc).filter((d) => d?.kind);

/** The objects `kubectl apply -k <dir>` applies (deploy/'s kustomizations list files, not bases). */
function kustomized(...dir: string[]): Doc[] {
  const root = join(repoRoot, ...dir);
  const [k] = parse(join(root, "kustomization.yaml")) as unknown as { resources: string[] }[];
  return k.resources.flatMap((r) => parse(join(root, r)));
}

/** The rules of `role` (one of `docs`), those of the ClusterRoles it aggregates included. */
function rulesOf(role: Doc, docs: Doc[]): Rule[] {
  const selectors = role.aggregationRule?.clusterRoleSelectors ?? [];
  const aggregated = docs.filter((d) =>
    d.kind === "ClusterRole" &&
    selectors.some((s) => Object.entries(s.matchLabels).every(([k, v]) => d.metadata.labels?.[k] === v))
  );
  return [...(role.rules ?? []), ...aggregated.flatMap((d) => d.rules ?? [])];
}

/** What `kind` bindings in `docs` grant espejo's ServiceAccount, by namespace ("" for cluster-wide). */
function granted(docs: Doc[]): Map<string, Rule[]> {
  const out = new Map<string, Rule[]>();
  for (const b of docs.filter((d) => d.kind === "ClusterRoleBinding" || d.kind === "RoleBinding")) {
    const toEspejo = b.subjects?.some((s) =>
      s.kind === "ServiceAccount" && s.name === "espejo" && s.namespace === "espejo-system"
    );
    if (!toEspejo) continue;
    const where = b.kind === "RoleBinding" ? b.metadata.namespace! : "";
    const role = docs.find((d) =>
      d.kind === b.roleRef!.kind && d.metadata.name === b.roleRef!.name &&
      (d.kind === "ClusterRole" || d.metadata.namespace === where)
    );
    assert.ok(role, `${b.kind} ${b.metadata.name} refers to a role deploy/ ships`);
    out.set(where, [...(out.get(where) ?? []), ...rulesOf(role, docs)]);
  }
  return out;
}

const grants = (rules: Rule[], resource: string, verb: string, group = "") =>
  rules.some((r) =>
    (r.apiGroups ?? []).some((g) => g === group || g === "*") &&
    (r.resources ?? []).some((x) => x === resource || x === "*") &&
    (r.verbs ?? []).some((v) => v === verb || v === "*")
  );

Deno.test("deploy/ grants espejo neither Secrets nor ServiceAccounts nor Events cluster-wide, and no escalation", () => {
  const cluster = granted(kustomized("deploy")).get("") ?? [];
  assert.ok(grants(cluster, "configmaps", "create"), "the common kinds are granted");
  assert.ok(grants(cluster, "roles", "create", "rbac.authorization.k8s.io"), "Roles too, within espejo's own rights");
  for (const verb of [...VERBS, "patch"]) {
    for (const resource of ["secrets", "serviceaccounts", "events"]) {
      assert.ok(!grants(cluster, resource, verb), `${verb} ${resource} cluster-wide`);
    }
  }
  assert.ok(!grants(cluster, "events", "create", "events.k8s.io"), "events.k8s.io neither");
  for (const verb of ["bind", "escalate", "impersonate"]) {
    assert.ok(!cluster.some((r) => r.verbs?.includes(verb) || r.verbs?.includes("*")), verb);
  }
  assert.ok(!cluster.some((r) => r.resources?.includes("*")), "no wildcard resource");
});

Deno.test("deploy/ lets espejo create and patch Events only in its own namespace, where it reads SyncConfigs", () => {
  const docs = kustomized("deploy");
  const byNamespace = granted(docs);
  const deployment = docs.find((d) => d.kind === "Deployment") as Doc & {
    spec: { template: { spec: { containers: { env: { name: string; valueFrom?: unknown }[] }[] } } };
  };
  const own = deployment.metadata.namespace!;
  const env = deployment.spec.template.spec.containers[0].env;
  assert.deepEqual(env.find((e) => e.name === "WATCH_NAMESPACE")?.valueFrom, {
    fieldRef: { fieldPath: "metadata.namespace" },
  });
  for (const verb of ["create", "patch"]) assert.ok(grants(byNamespace.get(own) ?? [], "events", verb), verb);
  for (const [where, rules] of byNamespace) {
    if (where !== own) assert.ok(!grants(rules, "events", "create"), `no events in ${where || "every namespace"}`);
  }
});

Deno.test("each opt-in of deploy/opt-in/ is one aggregated ClusterRole; lib names the one that grants each kind", () => {
  const dirs = [...Deno.readDirSync(join(repoRoot, "deploy", "opt-in"))].filter((e) => e.isDirectory).map((e) => e.name)
    .filter((d) => d !== "delegation");
  assert.deepEqual(dirs.sort(), ["events-in-every-namespace", "secrets", "serviceaccounts"]);
  const roles = new Map<string, Doc>();
  for (const dir of dirs) {
    const docs = kustomized("deploy", "opt-in", dir);
    assert.equal(docs.length, 1, dir);
    assert.equal(docs[0].kind, "ClusterRole");
    assert.equal(docs[0].metadata.labels?.[AGGREGATE], "true", `${dir} aggregates into espejo-manager`);
    roles.set(`deploy/opt-in/${dir}`, docs[0]);
  }
  for (const [resource, dir] of Object.entries(OPT_IN_KINDS)) {
    const role = roles.get(dir);
    assert.ok(role, `${dir} exists`);
    for (const verb of VERBS) assert.ok(grants(role.rules ?? [], resource, verb), `${dir}: ${verb} ${resource}`);
  }
  const events = roles.get("deploy/opt-in/events-in-every-namespace")!;
  assert.deepEqual(events.rules, [{ apiGroups: [""], resources: ["events"], verbs: ["create", "patch"] }]);
});

Deno.test("deploy/opt-in/delegation grants espejo two impersonations and access reviews only, each bound on its own, not aggregated", () => {
  const docs = kustomized("deploy", "opt-in", "delegation");
  assert.deepEqual(docs.map((d) => `${d.kind} ${d.metadata.name}`).sort(), [
    "ClusterRole espejo-impersonate-serviceaccounts",
    "ClusterRole espejo-impersonate-syncconfig-extra",
    "ClusterRole espejo-review-delegated-rights",
    "ClusterRoleBinding espejo-impersonate-serviceaccounts",
    "ClusterRoleBinding espejo-impersonate-syncconfig-extra",
    "ClusterRoleBinding espejo-review-delegated-rights",
  ]);
  // Not aggregated into espejo-manager: a RoleBinding of the first narrows delegation to some namespaces, which an
  // aggregated rule, granted cluster-wide by espejo-manager's binding, would undo.
  for (const role of docs.filter((d) => d.kind === "ClusterRole")) {
    assert.equal(role.metadata.labels?.[AGGREGATE], undefined, role.metadata.name);
    assert.equal(role.aggregationRule, undefined, role.metadata.name);
  }
  const rules = granted(docs).get("") ?? [];
  assert.deepEqual(rules, [
    { apiGroups: [""], resources: ["serviceaccounts"], verbs: ["impersonate"] },
    {
      apiGroups: ["authentication.k8s.io"],
      resources: ["userextras/sync.appuio.ch/syncconfig"],
      verbs: ["impersonate"],
    },
    { apiGroups: ["authorization.k8s.io"], resources: ["subjectaccessreviews"], verbs: ["create"] },
  ]);
  // ServiceAccounts only (never users, groups or uids), and the one extra lib sends (never every extra).
  assert.ok(grants(rules, "serviceaccounts", "impersonate"));
  for (const [group, resource] of [["", "users"], ["", "groups"], ["authentication.k8s.io", "uids"]]) {
    assert.ok(!grants(rules, resource, "impersonate", group), resource);
  }
  assert.ok(!rules.some((r) => r.resources?.some((x) => x === "userextras" || x.endsWith("*"))), "every extra");
  assert.ok(grants(rules, `userextras/${SYNCCONFIG_EXTRA}`, "impersonate", "authentication.k8s.io"));
  // Each bound once, to espejo's ServiceAccount as deploy/ makes it.
  for (const binding of docs.filter((d) => d.kind === "ClusterRoleBinding")) {
    assert.deepEqual(binding.subjects, [{ kind: "ServiceAccount", name: "espejo", namespace: "espejo-system" }]);
    assert.equal(binding.roleRef?.name, binding.metadata.name);
  }
});
