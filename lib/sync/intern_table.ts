/**
 * One copy of each of a bounded number of strings, each with a number: values that thousands of cached objects
 * repeat (the owner and creation annotations, field managers) are kept once, and a packed entry names them by number.
 * Only what {@link add} was given is kept: the caller admits its own values, never what anyone may write.
 */
export class InternTable {
  readonly #index = new Map<string, number>();
  readonly #values: string[] = [];

  constructor(private readonly max: number) {}

  /** Keeps `v` if there is room. */
  add(v: string): void {
    if (this.#index.has(v) || this.#values.length >= this.max) return;
    this.#index.set(v, this.#values.length);
    this.#values.push(v);
  }

  /** The kept copy of `v`, or `v` itself when it is not kept. */
  intern(v: string): string {
    const i = this.indexOf(v);
    return i === undefined ? v : this.#values[i];
  }

  /** The number of `v`, undefined when it is not kept. */
  indexOf(v: string): number | undefined {
    return this.#index.get(v);
  }

  /** The string numbered `i`. */
  at(i: number): string | undefined {
    return this.#values[i];
  }

  get size(): number {
    return this.#values.length;
  }
}
