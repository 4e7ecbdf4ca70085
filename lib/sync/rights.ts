/**
 * What a SyncConfig of an untrusted namespace may do and read, asked for its ServiceAccount. espejo reads from caches
 * filled with its own rights; a team's SyncConfig must learn nothing from them that its ServiceAccount could not read
 * itself, and must not contest an object it could not write (lib/sync/delegated_view.ts). So before a decision that
 * depends on such a fact, the ServiceAccount's right is asked by a SubjectAccessReview for it, with its groups and
 * the SyncConfig's user extra, as its writes are sent (lib/kube/access_review.ts): the answer is the same whether the
 * object exists or not, and is what the API server decides for the ServiceAccount's own request. espejo asks as
 * itself, so a review needs no impersonation: where espejo may not impersonate the ServiceAccount, the SyncConfig's
 * writes still fail with the API server's words for that.
 *
 * A right is asked for a kind, not an object: held cluster-wide (one review for every namespace) or in the namespace
 * (one for every object of the kind there). A right granted for some names only (`resourceNames`) is not looked for:
 * the objects a team names cost it no review each, so a SyncConfig of thousands of items costs what one of a few kinds
 * does.
 *
 * Cost, bounded whatever a team writes:
 * - An allowed verdict stands {@link RIGHTS_TTL_MS} (a right revoked is seen within that; a write is still authorized
 *   by the API server as the ServiceAccount, whatever a verdict said); a denied one {@link DENIED_FIRST_MS}, doubling
 *   with each denial in a row up to the same, so that a right granted a moment after a namespace was made is seen
 *   within seconds.
 * - Reviews are paced per team (the SyncConfig's namespace): {@link TEAM_PACE}. A question past the pace is not waited
 *   for: {@link ReviewsPaced} says when to ask again, and the caller decides nothing meanwhile (no worker waits).
 * - Verdicts are kept per SyncConfig, at most {@link MAX_VERDICTS_PER_CONFIG} each, least recently used out first (one
 *   team's SyncConfig cannot push another's out), and go when the SyncConfig changes or goes: editing its spec has a
 *   right checked at once. Concurrent asks of one question share one review.
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
/** Verdicts kept per SyncConfig at most: about 200 bytes each. */
export const MAX_VERDICTS_PER_CONFIG = 2_000;
/** Reviews per team (SyncConfig namespace): a second, and at once. */
export const TEAM_PACE = { perSecond: 5, burst: 50 };

/** A SyncConfig that writes as a ServiceAccount, as the reviews need it. */
export interface Asker {
  key: string;
  /** The team whose pace the reviews take from: the SyncConfig's namespace. */
  namespace: string;
  writeAs: WriteIdentity;
}

/**
 * A right, or the API server's words for its refusal and when it is asked again (`recheckInMs`: a decision it hid
 * should be made again then).
 */
export type Right = { allowed: true } | { allowed: false; denial: string; recheckInMs: number };

/** The team's reviews are past their pace: ask again after `retryInMs`; nothing was learned. */
export class ReviewsPaced extends Error {
  constructor(readonly retryInMs: number) {
    super(`the reviews of this SyncConfig's namespace are past their pace; asked again in ${retryInMs} ms`);
    this.name = "ReviewsPaced";
  }
}

const ALLOWED: Right = { allowed: true };

/** A verdict, until when it stands, and how many denials in a row led to it. */
interface Verdict {
  allowed: boolean;
  until: number;
  denials: number;
}

export class Rights {
  /** By SyncConfig key. */
  readonly #verdicts = new Map<string, TtlCache<Verdict>>();
  readonly #asking = new Map<string, Promise<Verdict>>();
  /** By team: reviews it may still send now, and when that was counted. */
  readonly #pace = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly client: KubeClient,
    private readonly o: {
      ttlMs?: number;
      deniedFirstMs?: number;
      maxPerConfig?: number;
      pace?: { perSecond: number; burst: number };
      now?: () => number;
    } = {},
  ) {}

  /**
   * Whether `asker`'s ServiceAccount may make the request `a` describes (its `name`, if any, is not looked at): allowed
   * when the right is held cluster-wide or in the namespace. Rejects with {@link ReviewsPaced} when the team's reviews
   * are past their pace, with the API server's error when a review cannot be made (an outage, espejo may not review):
   * no verdict is kept then.
   */
  async may(asker: Asker, a: ResourceAttributes): Promise<Right> {
    const kind = { ...a, name: undefined };
    const scopes = a.namespace !== undefined ? [{ ...kind, namespace: undefined }, kind] : [kind];
    let until = Infinity;
    for (const scope of scopes) {
      const verdict = await this.#review(asker, scope);
      if (verdict.allowed) return ALLOWED;
      until = Math.min(until, verdict.until);
    }
    const recheckInMs = Math.max(0, until - this.#now());
    return { allowed: false, denial: forbiddenMessage(asker.writeAs.username, a), recheckInMs };
  }

  /** The SyncConfig changed or went: its verdicts go, and its next decisions ask again. */
  forgetConfig(cfgKey: string): void {
    this.#verdicts.delete(cfgKey);
  }

  #review(asker: Asker, a: ResourceAttributes): Promise<Verdict> {
    // Who asks is part of the key: an answer for a ServiceAccount the SyncConfig named before serves no other.
    const key = [asker.writeAs.username, a.verb, a.group, a.resource, a.namespace ?? ""].join("\0");
    let book = this.#verdicts.get(asker.key);
    const known = book?.get(key);
    if (known && this.#now() < known.until) return Promise.resolve(known);
    const asking = this.#asking.get(`${asker.key}\0${key}`);
    if (asking) return asking;
    this.#spend(asker.namespace);
    book ??= this.#book(asker.key);
    const { username, as } = asker.writeAs;
    const review = reviewUserAccess(this.client, username, a, as.extra).then(({ allowed }) => {
      // Denials in a row wait longer each time; an allowed verdict, or none kept, starts the count again.
      const denials = allowed ? 0 : known && !known.allowed ? known.denials + 1 : 0;
      const ttl = this.o.ttlMs ?? RIGHTS_TTL_MS;
      const standsMs = allowed ? ttl : Math.min((this.o.deniedFirstMs ?? DENIED_FIRST_MS) * 2 ** denials, ttl);
      const verdict = { allowed, until: this.#now() + standsMs, denials };
      // Kept past its time, so that the next denial knows how many came before; not if the SyncConfig went meanwhile.
      if (this.#verdicts.get(asker.key) === book) book.set(key, verdict, 2 * ttl);
      return verdict;
    }).finally(() => this.#asking.delete(`${asker.key}\0${key}`));
    this.#asking.set(`${asker.key}\0${key}`, review);
    return review;
  }

  #book(cfgKey: string): TtlCache<Verdict> {
    const book = new TtlCache<Verdict>(this.o.maxPerConfig ?? MAX_VERDICTS_PER_CONFIG, () => this.#now());
    this.#verdicts.set(cfgKey, book);
    return book;
  }

  /** Takes one review from `team`'s pace, or throws {@link ReviewsPaced}. */
  #spend(team: string): void {
    const { perSecond, burst } = this.o.pace ?? TEAM_PACE;
    const now = this.#now();
    const pace = this.#pace.get(team) ?? { tokens: burst, at: now };
    pace.tokens = Math.min(burst, pace.tokens + ((now - pace.at) / 1000) * perSecond);
    pace.at = now;
    this.#pace.set(team, pace);
    if (pace.tokens < 1) throw new ReviewsPaced(Math.ceil(((1 - pace.tokens) / perSecond) * 1000));
    pace.tokens--;
  }

  #now(): number {
    return (this.o.now ?? Date.now)();
  }
}
