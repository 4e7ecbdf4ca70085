/**
 * The rights review of `espejo plan --check-rights`, for people and for scripts: what the controller's own identity
 * lacks (./rights.ts), then what each ServiceAccount a planned SyncConfig writes as lacks, namespace by namespace
 * (./service_account_review.ts). A missing right is said as kubectl and the API server say it, subject first:
 * `ServiceAccount team/writer cannot create configmaps in namespace team-3`.
 */
import { OPT_IN_KINDS } from "../sync/missing_right.ts";
import type { Right } from "./rights.ts";
import type { ServiceAccountReview } from "./service_account_review.ts";
import { MAX_NAMESPACED_REVIEWS } from "./service_account_review.ts";

/** The controller's own identity and what it lacks. */
export interface ControllerReview {
  identity: string;
  missing: Right[];
  error?: string;
}

/** Missing rights listed per ServiceAccount in the text; the JSON output has them all. */
const MAX_LINES = 20;

/** `ServiceAccount ns/name` for a ServiceAccount's username, else `User "name"` (as the API server's 403 says). */
export function subjectWords(username: string): string {
  const sa = /^system:serviceaccount:([^:]+):([^:]+)$/.exec(username);
  return sa ? `ServiceAccount ${sa[1]}/${sa[2]}` : `User ${JSON.stringify(username)}`;
}

/** A resource as kubectl names it: `configmaps`, `rolebindings.rbac.authorization.k8s.io`, `serviceaccounts/x`. */
function resourceWords(r: Right): string {
  const named = r.name ? `/${r.name}` : "";
  if (!r.group) return `${r.resource}${named}`;
  // A subresource's name may hold dots itself (userextras/sync.appuio.ch/syncconfig): the group goes apart.
  return r.resource.includes("/")
    ? `${r.resource}${named} in API group ${r.group}`
    : `${r.resource}.${r.group}${named}`;
}

/** `<subject> cannot <verb> <resource>[ in namespace <ns>]`. */
export function cannot(username: string, r: Right): string {
  return `${subjectWords(username)} cannot ${r.verb} ${resourceWords(r)}` +
    (r.namespace ? ` in namespace ${r.namespace}` : "");
}

/** The text lines of the review. */
export function rightsText(controller: ControllerReview, serviceAccounts: ServiceAccountReview[]): string[] {
  const lines: string[] = [];
  const { identity, missing, error } = controller;
  lines.push(`Rights checked for ${identity}:`);
  const impersonation = missing.filter((m) => m.verb === "impersonate");
  const own = missing.filter((m) => m.verb !== "impersonate");
  if (error) lines.push(`  ${error}`);
  else if (missing.length) {
    if (own.length) {
      const list = own.map((m) =>
        `${m.verb} ${m.group ? `${m.resource}.${m.group}` : m.resource}${m.namespace ? ` in ${m.namespace}` : ""}`
      ).join(", ");
      lines.push(`  it lacks ${own.length}: ${list}`);
    }
    for (const m of impersonation) lines.push(`  ${cannot(identity, m)}`);
    const optIns = new Set(own.flatMap((m) => (!m.group && OPT_IN_KINDS[m.resource]) || []));
    for (const dir of optIns) lines.push(`  opt in: kubectl apply -k ${dir}`);
    if (impersonation.length) {
      lines.push("  opt in to writing as a SyncConfig's ServiceAccount: kubectl apply -k deploy/opt-in/delegation");
    }
    lines.push("  how to grant rights to espejo: docs/install.md#rbac");
  } else lines.push("  it has every right this plan needs.");
  for (const sa of serviceAccounts) lines.push(...serviceAccountText(sa));
  return lines;
}

function serviceAccountText(sa: ServiceAccountReview): string[] {
  const n = sa.syncConfigs.length;
  const lines = [
    `Rights checked for ServiceAccount ${sa.serviceAccount}, which SyncConfig${n === 1 ? "" : "s"} ` +
    `${sa.syncConfigs.join(", ")} write${n === 1 ? "s" : ""} as:`,
  ];
  if (sa.error) lines.push(`  ${sa.error}`);
  for (const m of sa.missing.slice(0, MAX_LINES)) lines.push(`  ${cannot(sa.username, m)}`);
  const more = sa.missing.length - MAX_LINES;
  if (more > 0) lines.push(`  ... and ${more} more (--output json lists them all)`);
  if (sa.unreviewed) {
    lines.push(
      `  ${sa.unreviewed} of its rights not reviewed: a plan asks at most ${MAX_NAMESPACED_REVIEWS} namespaced ` +
        "reviews (--target-namespace plans fewer namespaces)",
    );
  }
  if (sa.missing.length) {
    const [namespace, name] = sa.serviceAccount.split("/");
    lines.push(
      "  its team grants them with a RoleBinding in each of those namespaces (kubectl create rolebinding ... " +
        `--serviceaccount ${namespace}:${name}; docs/delegation.md)`,
    );
  } else if (!sa.error && !sa.unreviewed) lines.push("  it has every right this plan needs.");
  return lines;
}

/** The review for `--output json`: each missing right with its message. */
export function rightsJson(controller: ControllerReview, serviceAccounts: ServiceAccountReview[] | undefined) {
  const withMessage = (user: string) => (r: Right) => ({ ...r, message: cannot(user, r) });
  return {
    controller: {
      identity: controller.identity,
      missingRights: controller.missing.map(withMessage(controller.identity)),
      error: controller.error,
    },
    serviceAccounts: serviceAccounts?.map((sa) => ({
      serviceAccount: sa.serviceAccount,
      username: sa.username,
      syncConfigs: sa.syncConfigs,
      missingRights: sa.missing.map(withMessage(sa.username)),
      unreviewed: sa.unreviewed,
      error: sa.error,
    })),
  };
}
