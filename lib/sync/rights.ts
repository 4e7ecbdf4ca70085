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
 * An allowed verdict stands {@link RIGHTS_TTL_MS} (a right revoked is seen within that; a write is still authorized by
 * the API server as the ServiceAccount, whatever a verdict said); a denied one {@link DENIED_FIRST_MS}, doubling with
 * each denial in a row up to the same, so that a right granted a moment after a namespace was made is seen within
 * seconds. Verdicts are forgotten when the SyncConfig changes or goes: editing its spec has a right checked at once. Kept per
 * SyncConfig (its extra is part of who asks), at most {@link MAX_VERDICTS} in all, least recently used out first, so
 * the namespaces and objects a team names cost bounded memory. One review answers every namespace when a right is
 * held cluster-wide, and every object of a kind in a namespace when it is not limited to names; concurrent asks of
 * one question share one review.
 */
import type { KubeClient } from "../kube/client.ts";
import { forbiddenMessage, type ResourceAttributes, reviewUserAccess } from "../kube/access_review.ts";
import { TtlCache } from "../kube/ttl_cache.ts";
import type { WriteIdentity } from "../model/identity.ts";

/** How long an allowed verdict stands, and a denied one at most. */
export const RIGHTS_TTL_MS = 5 * 60_000;
/**
 * How long a denial first stands before it is asked again; each denial in a row doubles it, up to {@link RIGHTS_TTL_MS}.
 * A team that makes a namespace and binds its ServiceAccount there a moment later is seen within seconds, and a
 * namespace that stays denied costs a handful of reviews in its first minutes, then one each {@link RIGHTS_TTL_MS}.
 */
export const DENIED_FIRST_MS = 5_000;
/** Verdicts kept at most, of every SyncConfig: about 200 bytes each. */
export const MAX_VERDICTS = 10_000;

/** A SyncConfig that writes as a ServiceAccount, as the reviews need it. */
export interface Asker {
  key: string;
  writeAs: WriteIdentity;
}

/**
 * A right, or the API server's words for its refusal and when it is asked again (`recheckInMs`: a decision it hid
 * should be made again then).
 */
export type Right = { allowed: true } | { allowed: false; denial: string; recheckInMs: number };

const ALLOWED: Right = { allowed: true };

/** A verdict, until when it stands, and how many denials in a row led to it. */
interface Verdict {
  allowed: boolean;
  until: number;
  denials: number;
}

export class Rights {
  readonly #verdicts: TtlCache<Verdict>;
  readonly #asking = new Map<string, Promise<Verdict>>();

  constructor(
    private readonly client: KubeClient,
    private readonly ttlMs = RIGHTS_TTL_MS,
    max = MAX_VERDICTS,
    private readonly now: () => number = Date.now,
    private readonly deniedFirstMs = DENIED_FIRST_MS,
  ) {
    this.#verdicts = new TtlCache(max, now);
  }

  /**
   * Whether `asker`'s ServiceAccount may make the request `a` describes: allowed when the right is held cluster-wide
   * (one review for every namespace) or in the namespace for every name (one review for every object of the kind
   * there), else as RBAC decides for that name. Rejects with the API server's error when a review cannot be made (an
   * outage, espejo may not review): no verdict is kept then.
   */
  async may(asker: Asker, a: ResourceAttributes): Promise<Right> {
    // Broadest first: a right held cluster-wide answers for every namespace, one held in a namespace for every name.
    const scopes = [
      ...(a.namespace !== undefined ? [{ ...a, namespace: undefined, name: undefined }] : []),
      ...(a.name !== undefined ? [{ ...a, name: undefined }] : []),
      a,
    ];
    let until = Infinity;
    for (const scope of scopes) {
      const verdict = await this.#review(asker, scope);
      if (verdict.allowed) return ALLOWED;
      until = Math.min(until, verdict.until);
    }
    const recheckInMs = Math.max(0, until - this.now());
    return { allowed: false, denial: forbiddenMessage(asker.writeAs.username, a), recheckInMs };
  }

  /** The SyncConfig changed or went: its verdicts go, and its next decisions ask again. */
  forgetConfig(cfgKey: string): void {
    const prefix = `${cfgKey}\0`;
    this.#verdicts.deleteIf((key) => key.startsWith(prefix));
  }

  #review(asker: Asker, a: ResourceAttributes): Promise<Verdict> {
    const key = [asker.key, a.verb, a.group, a.resource, a.namespace ?? "", a.name ?? "\0"].join("\0");
    const known = this.#verdicts.get(key);
    if (known && this.now() < known.until) return Promise.resolve(known);
    let asking = this.#asking.get(key);
    if (!asking) {
      const { username, as } = asker.writeAs;
      asking = reviewUserAccess(this.client, username, a, as.extra).then(({ allowed }) => {
        // Denials in a row wait longer each time; an allowed verdict, or none kept, starts the count again.
        const denials = allowed ? 0 : known && !known.allowed ? known.denials + 1 : 0;
        const standsMs = allowed ? this.ttlMs : Math.min(this.deniedFirstMs * 2 ** denials, this.ttlMs);
        const verdict = { allowed, until: this.now() + standsMs, denials };
        // Kept past its time, so that the next denial knows how many came before.
        this.#verdicts.set(key, verdict, 2 * this.ttlMs);
        return verdict;
      }).finally(() => this.#asking.delete(key));
      this.#asking.set(key, asking);
    }
    return asking;
  }
}
