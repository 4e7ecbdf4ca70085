/**
 * What a SyncConfig of an untrusted namespace may do and read, asked as its ServiceAccount. espejo reads from caches
 * filled with its own rights; a team's SyncConfig must learn nothing from them that its ServiceAccount could not read
 * itself, and must not contest an object it could not write (lib/sync/delegated_view.ts). So before a decision that
 * depends on such a fact, the ServiceAccount's right is asked by a SubjectAccessReview for it, with its groups and
 * the SyncConfig's user extra, as its writes are sent (lib/kube/access_review.ts): the answer is the same whether the
 * object exists or not, and is what the API server decides for the ServiceAccount's own request. espejo asks as
 * itself, so a review needs no impersonation: where espejo may not impersonate the ServiceAccount, the SyncConfig's
 * writes still fail with the API server's words for that.
 *
 * Verdicts, allowed or denied, stand {@link RIGHTS_TTL_MS} (a right granted or revoked is seen within that; a write
 * is still authorized by the API server as the ServiceAccount, whatever a verdict said), and are forgotten when the
 * SyncConfig changes or goes: editing it is how a team has a right it just granted checked at once. Kept per
 * SyncConfig (its extra is part of who asks), at most {@link MAX_VERDICTS} in all, least recently used out first, so
 * the namespaces and objects a team names cost bounded memory. One review answers every namespace when a right is
 * held cluster-wide, and every object of a kind in a namespace when it is not limited to names; concurrent asks of
 * one question share one review.
 */
import type { KubeClient } from "../kube/client.ts";
import { forbiddenMessage, type ResourceAttributes, reviewUserAccess } from "../kube/access_review.ts";
import { TtlCache } from "../kube/ttl_cache.ts";
import type { WriteIdentity } from "../model/identity.ts";

/** How long a verdict stands. */
export const RIGHTS_TTL_MS = 5 * 60_000;
/** Verdicts kept at most, of every SyncConfig: about 200 bytes each. */
export const MAX_VERDICTS = 10_000;

/** A SyncConfig that writes as a ServiceAccount, as the reviews need it. */
export interface Asker {
  key: string;
  writeAs: WriteIdentity;
}

/** A right, or the API server's words for its refusal. */
export type Right = { allowed: true } | { allowed: false; denial: string };

const ALLOWED: Right = { allowed: true };

export class Rights {
  readonly #verdicts: TtlCache<boolean>;
  readonly #asking = new Map<string, Promise<boolean>>();

  constructor(
    private readonly client: KubeClient,
    private readonly ttlMs = RIGHTS_TTL_MS,
    max = MAX_VERDICTS,
    now: () => number = Date.now,
  ) {
    this.#verdicts = new TtlCache(max, now);
  }

  /**
   * Whether `asker`'s ServiceAccount may make the request `a` describes: allowed when the right is held cluster-wide
   * (one review for every namespace) or in the namespace for every name (one review for every object of the kind
   * there), else as RBAC decides for that name. Rejects with the API server's error when a review cannot be made (espejo may not impersonate, an
   * outage): no verdict is kept then.
   */
  async may(asker: Asker, a: ResourceAttributes): Promise<Right> {
    // Broadest first: a right held cluster-wide answers for every namespace, one held in a namespace for every name.
    const scopes = [
      ...(a.namespace !== undefined ? [{ ...a, namespace: undefined, name: undefined }] : []),
      ...(a.name !== undefined ? [{ ...a, name: undefined }] : []),
      a,
    ];
    for (const scope of scopes) if (await this.#review(asker, scope)) return ALLOWED;
    return { allowed: false, denial: forbiddenMessage(asker.writeAs.username, a) };
  }

  /** The SyncConfig changed or went: its verdicts go, and its next decisions ask again. */
  forgetConfig(cfgKey: string): void {
    const prefix = `${cfgKey}\0`;
    this.#verdicts.deleteIf((key) => key.startsWith(prefix));
  }

  #review(asker: Asker, a: ResourceAttributes): Promise<boolean> {
    const key = [asker.key, a.verb, a.group, a.resource, a.namespace ?? "", a.name ?? "\0"].join("\0");
    const known = this.#verdicts.get(key);
    if (known !== undefined) return Promise.resolve(known);
    let asking = this.#asking.get(key);
    if (!asking) {
      const { username, as } = asker.writeAs;
      asking = reviewUserAccess(this.client, username, a, as.extra).then((v) => {
        this.#verdicts.set(key, v.allowed, this.ttlMs);
        return v.allowed;
      }).finally(() => this.#asking.delete(key));
      this.#asking.set(key, asking);
    }
    return asking;
  }
}
