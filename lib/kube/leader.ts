/**
 * Leader election with a `coordination.k8s.io/v1` Lease, as client-go's leaderelection does it, under the Go
 * espejo's Lease name so that old and new controller never write at the same time during a migration.
 *
 * A Lease is taken when it is free or its holder has not renewed it for `leaseDuration`, judged by the local
 * clock from the moment this process last saw it change (clocks of different machines are never compared).
 */
import { getLogger } from "@logtape/logtape";
import type { KubeClient } from "./client.ts";
import { isConflict, isNotFound } from "./errors.ts";
import { sleep } from "./backoff.ts";
import { createLease, readLease, replaceLease } from "./api/coordination_v1_client.ts";
import { type DecodedLease, decodeLease } from "./api/decode.ts";

export const LEASE_NAME = "bd39f6a0.appuio.ch";
const log = getLogger(["espejo", "leader"]);

export interface LeaderElectionOptions {
  client: KubeClient;
  namespace: string;
  identity: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  onChange?: (leader: boolean) => void;
}

export class LeaderElector {
  #observed?: { lease: DecodedLease; at: number };
  #leading = false;

  constructor(private readonly o: LeaderElectionOptions) {}

  get #lease(): { namespace: string; name: string } {
    return { namespace: this.o.namespace, name: LEASE_NAME };
  }

  /** Each Lease request must finish well within the renew deadline. */
  get #timeoutMs(): number {
    return Math.max(1000, Math.floor(this.o.renewDeadlineMs / 2));
  }

  get isLeader(): boolean {
    return this.#leading;
  }

  /** Resolves once this process holds the Lease (or `signal` aborts). */
  async acquire(signal: AbortSignal): Promise<void> {
    log.info("Waiting to become leader (Lease {namespace}/{name}, identity {identity})", {
      namespace: this.o.namespace,
      name: LEASE_NAME,
      identity: this.o.identity,
    });
    while (!signal.aborted) {
      if (
        await this.#tryAcquireOrRenew().catch((
          e,
        ) => (log.warn("Leader election: {error}", { error: String(e) }), false))
      ) {
        this.#set(true);
        return;
      }
      await sleep(this.o.retryPeriodMs * (1 + Math.random() * 0.2), signal);
    }
  }

  /**
   * Renews every retry period until `signal` aborts, or until renewal has failed for longer than the renew
   * deadline: then `onLost` is called and the process must stop writing at once. The deadline is kept by a timer
   * of its own, so a renewal request that hangs cannot stretch it. Releasing is the caller's job, after its last
   * write ({@link release}).
   */
  async hold(signal: AbortSignal, onLost: () => void): Promise<void> {
    const lost = () => {
      if (signal.aborted) return;
      this.#set(false);
      log.error("Lost leadership: the Lease could not be renewed within {ms} ms", { ms: this.o.renewDeadlineMs });
      onLost();
    };
    let deadline = setTimeout(lost, this.o.renewDeadlineMs);
    try {
      while (!signal.aborted) {
        await sleep(this.o.retryPeriodMs, signal);
        if (signal.aborted) break;
        if (await this.#tryAcquireOrRenew().catch(() => false)) {
          clearTimeout(deadline);
          deadline = setTimeout(lost, this.o.renewDeadlineMs);
        }
      }
    } finally {
      clearTimeout(deadline);
    }
  }

  /** Gives the Lease up so a standby can take over at once instead of waiting for it to expire. */
  async release(): Promise<void> {
    if (!this.#leading || !this.#observed) return;
    const lease = this.#observed.lease;
    if (lease.spec.holderIdentity !== this.o.identity) return;
    try {
      await replaceLease(this.o.client, this.#lease, {
        apiVersion: "coordination.k8s.io/v1",
        kind: "Lease",
        metadata: lease.metadata,
        spec: { ...lease.spec, holderIdentity: "", leaseDurationSeconds: 1, renewTime: microTime(new Date()) },
      }, { urgent: true }); // a Lease renewal must not wait behind a burst of writes
      log.info("Released the leader Lease");
    } catch (e) {
      log.warn("Could not release the leader Lease: {error}", { error: String(e) });
    }
    this.#set(false);
  }

  #set(leading: boolean): void {
    if (this.#leading !== leading) {
      this.#leading = leading;
      this.o.onChange?.(leading);
      if (leading) log.info("Became leader");
    }
  }

  async #tryAcquireOrRenew(): Promise<boolean> {
    const now = new Date();
    const durationSeconds = Math.ceil(this.o.leaseDurationMs / 1000);
    // A Lease renewal must not wait behind a burst of writes.
    const options = { urgent: true, timeoutMs: this.#timeoutMs };
    let current: DecodedLease | undefined;
    try {
      current = decodeLease(await readLease(this.o.client, this.#lease, options));
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
    if (!current) {
      const created = await createLease(this.o.client, { namespace: this.o.namespace }, {
        apiVersion: "coordination.k8s.io/v1",
        kind: "Lease",
        metadata: this.#lease,
        spec: {
          holderIdentity: this.o.identity,
          leaseDurationSeconds: durationSeconds,
          acquireTime: microTime(now),
          renewTime: microTime(now),
          leaseTransitions: 0,
        },
      }, options).then(decodeLease, (e) => {
        if (isConflict(e)) return undefined; // someone else created it first
        throw e;
      });
      if (created) this.#observed = { lease: created, at: Date.now() };
      return created !== undefined;
    }
    const prev = this.#observed?.lease;
    if (!prev || prev.metadata.resourceVersion !== current.metadata.resourceVersion) {
      this.#observed = { lease: current, at: Date.now() };
    }
    const holder = current.spec.holderIdentity ?? "";
    const heldByMe = holder === this.o.identity;
    const expiresAt = this.#observed!.at + (current.spec.leaseDurationSeconds ?? durationSeconds) * 1000;
    if (holder && !heldByMe && Date.now() < expiresAt) return false;
    const spec = {
      ...current.spec,
      holderIdentity: this.o.identity,
      leaseDurationSeconds: durationSeconds,
      renewTime: microTime(now),
      acquireTime: heldByMe ? current.spec.acquireTime : microTime(now),
      leaseTransitions: (current.spec.leaseTransitions ?? 0) + (heldByMe ? 0 : 1),
    };
    try {
      const body = { apiVersion: "coordination.k8s.io/v1", kind: "Lease", metadata: current.metadata, spec };
      const updated = decodeLease(await replaceLease(this.o.client, this.#lease, body, options));
      if (updated) this.#observed = { lease: updated, at: Date.now() };
      return true;
    } catch (e) {
      if (isConflict(e)) return false; // someone else was faster
      throw e;
    }
  }
}

/** RFC 3339 with microseconds, the format of `MicroTime` fields. */
function microTime(d: Date): string {
  return d.toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}
