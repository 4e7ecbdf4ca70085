/**
 * One copy of each of a bounded number of strings, each with a number: values that thousands of cached objects
 * repeat (the owner and creation annotations, field managers) are kept once, and a packed entry names them by number.
 */
export class InternTable {
  readonly #index = new Map<string, number>();
  readonly #values: string[] = [];

  constructor(private readonly max: number) {}

  /** The kept copy of `v`, or `v` itself once the table is full. */
  intern(v: string): string {
    const i = this.indexOf(v);
    return i === undefined ? v : this.#values[i];
  }

  /** The number of `v` (kept now if there is room), undefined once the table is full and `v` is not in it. */
  indexOf(v: string): number | undefined {
    const known = this.#index.get(v);
    if (known !== undefined || this.#values.length >= this.max) return known;
    this.#index.set(v, this.#values.length);
    this.#values.push(v);
    return this.#values.length - 1;
  }

  /** The string numbered `i`. */
  at(i: number): string | undefined {
    return this.#values[i];
  }

  get size(): number {
    return this.#values.length;
  }
}
