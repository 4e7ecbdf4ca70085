/**
 * Aborts a watch that brought nothing for a while: a connection can die without a close (a NAT or proxy drops it),
 * and the server sends a bookmark about once a minute. One timer that looks again when it fires, rather than one set
 * per event: a restart's 100,000 events made 100,000 timers, 2 % of its CPU.
 */
export class IdleWatchdog {
  readonly #abort = new AbortController();
  #last = performance.now();
  #timer: ReturnType<typeof setTimeout>;

  constructor(readonly idleMs: number) {
    this.#timer = setTimeout(this.#look, idleMs);
  }

  /** Aborted once `idleMs` passed without {@link arrived}. */
  get signal(): AbortSignal {
    return this.#abort.signal;
  }

  /** Something arrived. */
  arrived(): void {
    this.#last = performance.now();
  }

  stop(): void {
    clearTimeout(this.#timer);
  }

  #look = (): void => {
    const quiet = performance.now() - this.#last;
    if (quiet >= this.idleMs) this.#abort.abort();
    else this.#timer = setTimeout(this.#look, this.idleMs - quiet);
  };
}
