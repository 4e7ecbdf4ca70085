/** What a failure for lack of a right tells the cluster admin to do (lib/sync/missing_right.ts). */
import assert from "node:assert/strict";
import { missingRightHint } from "../../lib/sync/missing_right.ts";

const SA = 'User "system:serviceaccount:espejo-system:espejo"';
/** The API server's own words (k8s.io/apiserver, RBAC's escalation check), as they reach a failure's reason. */
const CASES: [string, string, RegExp | ""][] = [
  [
    "a Secret cache that cannot list",
    `cannot list and watch secrets: the API server refused it (403 Forbidden: secrets is forbidden: ${SA} cannot ` +
    'list resource "secrets" in API group "" at the cluster scope)',
    /^; espejo gets secrets only on request: kubectl apply -k deploy\/opt-in\/secrets \(docs\/install\.md#opt-in-kinds\)$/,
  ],
  [
    "a Secret write",
    `the API server refused it (403 Forbidden: secrets "creds" is forbidden: ${SA} cannot create resource ` +
    '"secrets" in API group "" in the namespace "team-a")',
    /kubectl apply -k deploy\/opt-in\/secrets/,
  ],
  [
    "a ServiceAccount",
    `the API server refused it (403 Forbidden: serviceaccounts is forbidden: ${SA} cannot watch resource ` +
    '"serviceaccounts" in API group "" at the cluster scope)',
    /kubectl apply -k deploy\/opt-in\/serviceaccounts/,
  ],
  [
    "a kind of another group",
    `the API server refused it (403 Forbidden: podmonitors.monitoring.coreos.com is forbidden: ${SA} cannot list ` +
    'resource "podmonitors" in API group "monitoring.coreos.com" at the cluster scope)',
    /^; grant it to espejo with a ClusterRole labelled sync\.appuio\.ch\/aggregate-to-espejo: "true" \(docs\/install\.md#syncing-other-kinds\)$/,
  ],
  [
    "a core kind deploy/ does not know",
    `the API server refused it (403 Forbidden: persistentvolumeclaims is forbidden: ${SA} cannot list resource ` +
    '"persistentvolumeclaims" in API group "" at the cluster scope)',
    /ClusterRole labelled sync\.appuio\.ch\/aggregate-to-espejo/,
  ],
  [
    "a Role granting more than espejo holds",
    'the API server refused it (403 Forbidden: roles.rbac.authorization.k8s.io "pods" is forbidden: user ' +
    '"system:serviceaccount:espejo-system:espejo" (groups=["system:serviceaccounts"]) is attempting to grant RBAC ' +
    'permissions not currently held:\n{APIGroups:[""], Resources:["pods"], Verbs:["get"]})',
    /^; espejo may grant only rights it holds itself \(docs\/install\.md#roles-and-rolebindings-no-escalate-no-bind\)$/,
  ],
  [
    "an invalid object",
    'the API server refused it (422 Invalid: Secret "s" is invalid: data[bad key]: Invalid value)',
    "",
  ],
  ["a refused connection", "connect ECONNREFUSED 127.0.0.1:6443", ""],
];

for (const [name, reason, hint] of CASES) {
  Deno.test(`missingRightHint: ${name}`, () => {
    if (hint === "") assert.equal(missingRightHint(reason), "");
    else assert.match(missingRightHint(reason), hint);
  });
}

const TEAM = 'User "system:serviceaccount:team:writer"';
/** A SyncConfig that writes as ServiceAccount team/writer, in namespace team-a: [name, reason, hint]. */
const DELEGATED: [string, string, RegExp | ""][] = [
  [
    "a write the ServiceAccount may not make: its team grants it, in the target namespace",
    `the API server refused it (403 Forbidden: configmaps is forbidden: ${TEAM} cannot create resource ` +
    '"configmaps" in API group "" in the namespace "team-a")',
    /^; the SyncConfig writes as ServiceAccount team\/writer: grant it with a RoleBinding in namespace team-a \(kubectl create rolebinding \.\.\. --serviceaccount team:writer; docs\/delegation\.md\)$/,
  ],
  [
    "a Secret: still the team's grant, not espejo's opt-in",
    `the API server refused it (403 Forbidden: secrets "creds" is forbidden: ${TEAM} cannot create resource ` +
    '"secrets" in API group "" in the namespace "team-a")',
    /grant it with a RoleBinding in namespace team-a/,
  ],
  [
    "a RoleBinding granting more than the ServiceAccount holds",
    'the API server refused it (403 Forbidden: rolebindings.rbac.authorization.k8s.io "view" is forbidden: user ' +
    '"system:serviceaccount:team:writer" (groups=["system:serviceaccounts"]) is attempting to grant RBAC ' +
    'permissions not currently held:\n{APIGroups:[""], Resources:["pods"], Verbs:["get"]})',
    /ServiceAccount team\/writer: grant it with a RoleBinding in namespace team-a/,
  ],
  [
    "espejo may not impersonate the ServiceAccount: the cluster admin's opt-in",
    `the API server refused it (403 Forbidden: serviceaccounts "writer" is forbidden: ${SA} cannot impersonate ` +
    'resource "serviceaccounts" in API group "" in the namespace "team")',
    /^; espejo may not act as ServiceAccount team\/writer: the cluster admin grants it with kubectl apply -k deploy\/opt-in\/delegation \(docs\/delegation\.md\)$/,
  ],
  [
    "espejo may not set the extra",
    `the API server refused it (403 Forbidden: userextras.authentication.k8s.io "team/cfg" is forbidden: ${SA} ` +
    'cannot impersonate resource "userextras/sync.appuio.ch/syncconfig" in API group "authentication.k8s.io")',
    /kubectl apply -k deploy\/opt-in\/delegation/,
  ],
  ["an invalid object", 'the API server refused it (422 Invalid: ConfigMap "c" is invalid)', ""],
];

for (const [name, reason, hint] of DELEGATED) {
  Deno.test(`missingRightHint as a ServiceAccount: ${name}`, () => {
    if (hint === "") assert.equal(missingRightHint(reason, "team/writer", "team-a"), "");
    else assert.match(missingRightHint(reason, "team/writer", "team-a"), hint);
  });
}
