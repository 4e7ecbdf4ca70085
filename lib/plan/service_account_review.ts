/**
 * Reviews the namespaced rights of the ServiceAccounts planned SyncConfigs write as (./service_account_rights.ts),
 * with SubjectAccessReviews (not stored; the user running the plan needs `create` on subjectaccessreviews only, not
 * the right to impersonate).
 *
 * Bounded: a plan of M namespaces and K item kinds needs up to 4·M·K namespaced rights per ServiceAccount (2,000
 * namespaces and 3 kinds: 24,000). So each verb on each resource is first reviewed once cluster-wide: granted there
 * (a ClusterRoleBinding), it holds in every namespace and costs no namespaced review. Only a verb not granted
 * cluster-wide is reviewed namespace by namespace, {@link CONCURRENT_REVIEWS} at a time, and at most
 * {@link MAX_NAMESPACED_REVIEWS} of those per plan, across every ServiceAccount: the rights past that are counted
 * as not reviewed and said so, never reported as held nor as missing. A team's RoleBindings in a few dozen
 * namespaces cost a few hundred reviews, under a second on a nearby API server.
 */
import type { KubeClient } from "../kube/client.ts";
import { mapBounded } from "../sync/bounded.ts";
import { reasonOf } from "../sync/failures.ts";
import { mayDo, type Right } from "./rights.ts";
import { compareRights, type ServiceAccountNeed } from "./service_account_rights.ts";

/** Namespaced reviews per plan, at most (the cluster-wide ones come first and are not counted). */
export const MAX_NAMESPACED_REVIEWS = 2_000;
/** Reviews in flight at once. */
export const CONCURRENT_REVIEWS = 8;

/** What a ServiceAccount lacks for this plan. */
export interface ServiceAccountReview {
  serviceAccount: string;
  username: string;
  syncConfigs: string[];
  /** Namespaced rights it lacks, sorted by namespace, resource and verb. */
  missing: Right[];
  /** Rights not reviewed: past {@link MAX_NAMESPACED_REVIEWS}. */
  unreviewed: number;
  /** Why the reviews could not be asked. */
  error?: string;
}

/** Reviews each ServiceAccount's needs in order; `budget` namespaced reviews in all. */
export async function reviewServiceAccounts(
  client: KubeClient,
  needs: ServiceAccountNeed[],
  budget = MAX_NAMESPACED_REVIEWS,
): Promise<ServiceAccountReview[]> {
  const left = { reviews: budget };
  const out: ServiceAccountReview[] = [];
  for (const need of needs) out.push(await reviewOne(client, need, left));
  return out;
}

async function reviewOne(
  client: KubeClient,
  need: ServiceAccountNeed,
  left: { reviews: number },
): Promise<ServiceAccountReview> {
  const { serviceAccount, username, syncConfigs } = need;
  const review: ServiceAccountReview = { serviceAccount, username, syncConfigs, missing: [], unreviewed: 0 };
  const byVerb = Map.groupBy(need.rights, (r) => `${r.group}/${r.resource}/${r.verb}`);
  try {
    for (const rights of byVerb.values()) {
      const { group, resource, verb } = rights[0];
      if (await mayDo(client, username, { group, resource, verb })) continue; // cluster-wide: every namespace
      const asked = rights.slice(0, Math.max(0, left.reviews));
      left.reviews -= asked.length;
      review.unreviewed += rights.length - asked.length;
      const allowed = await mapBounded(asked, CONCURRENT_REVIEWS, (r) => mayDo(client, username, r));
      review.missing.push(...asked.filter((_, i) => !allowed[i]));
    }
  } catch (e) {
    review.error = `could not review the rights of ServiceAccount ${serviceAccount}: ${reasonOf(e)}`;
  }
  review.missing.sort(compareRights);
  return review;
}
