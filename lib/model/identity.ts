/**
 * Whose rights a SyncConfig's writes use. A SyncConfig may name a ServiceAccount of its own namespace in the
 * annotation `sync.appuio.ch/service-account`; espejo then sends every write for it (create, update, delete,
 * replace, the removal of a finalizer to replace, prune) as that ServiceAccount, by impersonation, and the API
 * server decides with the ServiceAccount's rights. Reads stay espejo's (the shared caches).
 *
 * The annotation holds a name, never a namespace: a SyncConfig can borrow only the rights of a ServiceAccount of its
 * own namespace, so whoever may write a SyncConfig there gets no more than that namespace's ServiceAccounts have. In
 * delegated mode (`--trusted-namespaces`) a SyncConfig outside the trusted namespaces must name one: without, it is
 * Invalid and writes nothing.
 *
 * An annotation rather than a spec field: the CRD stays the Go espejo's, and no older CRD's schema can prune it (a
 * pruned field would silently turn a team's writes into espejo's own).
 */
import type { Impersonation } from "../kube/client.ts";

export const SERVICE_ACCOUNT_ANNOTATION = "sync.appuio.ch/service-account";

/**
 * The user extra every write made as a ServiceAccount carries: the SyncConfig's `namespace/name`. The audit log
 * shows it beside the impersonated user, and the admission policy of deploy/admission admits such writes to what
 * espejo manages. Only who may impersonate this extra (`userextras/sync.appuio.ch/syncconfig`, a cluster-wide right)
 * can set it: not a tenant, not the ServiceAccount itself.
 */
export const SYNCCONFIG_EXTRA = "sync.appuio.ch/syncconfig";

/** The identity a SyncConfig's writes are made as, when it names a ServiceAccount. */
export interface WriteIdentity {
  /** The ServiceAccount, `namespace/name`. */
  serviceAccount: string;
  /** The user the API server authorizes: `system:serviceaccount:<namespace>:<name>`. */
  username: string;
  /** The SyncConfig whose writes these are, `namespace/name` (the {@link SYNCCONFIG_EXTRA}). */
  syncConfig: string;
  /** What each write carries (made once per compile, not per write). */
  as: Impersonation;
}

export type IdentityResult = { ok: true; writeAs?: WriteIdentity } | { ok: false; problem: string };

/**
 * Whether SyncConfigs of `namespace` are trusted: their authors may write with espejo's own rights, whatever the
 * SyncConfig writes as. Trust belongs to the namespace, not to the annotation: a platform SyncConfig that names a
 * ServiceAccount is still the platform's. Without delegated mode (`trusted` undefined) every SyncConfig espejo reads
 * is trusted: its author could drop the annotation and write as espejo.
 */
export function isTrustedNamespace(namespace: string, trusted: readonly string[] | undefined): boolean {
  return !trusted || trusted.includes(namespace);
}

/** Longest name the API server accepts for a ServiceAccount (a DNS-1123 subdomain). */
const MAX_NAME = 253;
const SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/**
 * The identity of the SyncConfig `namespace/name` with `annotations`. `trusted`: the trusted namespaces of delegated
 * mode, undefined when it is off (every SyncConfig without the annotation writes as espejo). The problem, when there
 * is one, is worded to follow `SyncConfig namespace/name: `.
 */
export function writeIdentity(
  namespace: string,
  name: string,
  annotations: Record<string, string> | undefined,
  trusted: readonly string[] | undefined,
): IdentityResult {
  const value = annotations?.[SERVICE_ACCOUNT_ANNOTATION];
  if (value === undefined) {
    if (!trusted || isTrustedNamespace(namespace, trusted)) return { ok: true };
    return {
      ok: false,
      problem: `names no ServiceAccount to write as, and its namespace ${namespace} is not trusted ` +
        `(--trusted-namespaces ${trusted.join(",")}): annotate it with ${SERVICE_ACCOUNT_ANNOTATION}: <name>, ` +
        `the name of a ServiceAccount of namespace ${namespace} allowed to write its items ` +
        "(docs/delegation.md)",
    };
  }
  const why = serviceAccountNameProblem(value);
  if (why) {
    return {
      ok: false,
      problem: `annotation ${SERVICE_ACCOUNT_ANNOTATION} ${JSON.stringify(value.slice(0, 300))} is not the name of ` +
        `a ServiceAccount: ${why}; it names one ServiceAccount of the SyncConfig's own namespace ${namespace}, ` +
        "without a namespace",
    };
  }
  const username = `system:serviceaccount:${namespace}:${value}`;
  const syncConfig = `${namespace}/${name}`;
  return {
    ok: true,
    writeAs: {
      serviceAccount: `${namespace}/${value}`,
      username,
      syncConfig,
      as: { user: username, extra: { [SYNCCONFIG_EXTRA]: syncConfig } },
    },
  };
}

/** Why `value` cannot name a ServiceAccount (a DNS-1123 subdomain, as the API server requires), or undefined. */
export function serviceAccountNameProblem(value: string): string | undefined {
  if (value === "") return "it is empty";
  if (value.length > MAX_NAME) return `it is longer than ${MAX_NAME} characters`;
  if (value.includes(":") || value.includes("/")) return "a ServiceAccount of another namespace cannot be named";
  if (!SUBDOMAIN.test(value)) {
    return "it must consist of lowercase letters, digits, '-' and '.', and start and end with a letter or digit";
  }
  return undefined;
}
