/**
 * What to do when the API server refuses espejo for lack of a right. Its message already names the right in kubectl's
 * words (`User "system:serviceaccount:espejo-system:espejo" cannot list resource "secrets" in API group "" at the
 * cluster scope`); the hint appended here says how a cluster admin grants it: the opt-in directory of deploy/ for the
 * kinds deploy/ leaves out on purpose, a small aggregated ClusterRole for any other kind (docs/install.md, "RBAC").
 * For a SyncConfig that writes as a ServiceAccount (lib/model/identity.ts) the refused user is that ServiceAccount,
 * and the hint names who grants it what: its team, with a RoleBinding in the target namespace; or, when espejo may
 * not impersonate it, the cluster admin (deploy/opt-in/delegation).
 * Wording only: whether a failure is retried is decided by its code (lib/sync/failures.ts), never by this text.
 */

/** The kinds (resources of the core group) deploy/ grants only on request, each with the directory that grants it. */
export const OPT_IN_KINDS: Readonly<Record<string, string>> = {
  secrets: "deploy/opt-in/secrets",
  serviceaccounts: "deploy/opt-in/serviceaccounts",
};

/** The RBAC authorizer's denial (k8s.io/apiserver's `forbiddenMessage`): the verb, the resource and its API group. */
const DENIED = /cannot (\S+) resource "([^"]+)" in API group "([^"]*)"/;
/** The RBAC API's escalation check: a Role or RoleBinding that grants more than espejo holds. */
const ESCALATION = /attempting to grant RBAC permissions not currently held/;

/**
 * The hint for a failure whose reason is `reason`, beginning with `; `, or "" when the reason is no missing right.
 * `serviceAccount` (`namespace/name`): the write was sent as it, in `namespace`.
 */
export function missingRightHint(reason: string, serviceAccount?: string, namespace?: string): string {
  const denied = DENIED.exec(reason);
  if (denied && denied[1] === "impersonate") {
    return `; espejo may not act as ${serviceAccount ? `ServiceAccount ${serviceAccount}` : "that user"}: the ` +
      "cluster admin grants it with kubectl apply -k deploy/opt-in/delegation (docs/delegation.md)";
  }
  if (serviceAccount && (denied || ESCALATION.test(reason))) {
    const [saNamespace, saName] = serviceAccount.split("/");
    return `; the SyncConfig writes as ServiceAccount ${serviceAccount}: grant it with a RoleBinding in namespace ` +
      `${namespace ?? "(the target namespace)"} (kubectl create rolebinding ... --serviceaccount ` +
      `${saNamespace}:${saName}; docs/delegation.md)`;
  }
  if (denied) {
    const [, , resource, group] = denied;
    const optIn = group === "" ? OPT_IN_KINDS[resource.split("/")[0]] : undefined;
    if (optIn) {
      return `; espejo gets ${resource} only on request: kubectl apply -k ${optIn} (docs/install.md#opt-in-kinds)`;
    }
    return `; grant it to espejo with a ClusterRole labelled sync.appuio.ch/aggregate-to-espejo: "true" ` +
      "(docs/install.md#syncing-other-kinds)";
  }
  if (ESCALATION.test(reason)) {
    return "; espejo may grant only rights it holds itself (docs/install.md#roles-and-rolebindings-no-escalate-no-bind)";
  }
  return "";
}
