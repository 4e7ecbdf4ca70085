/**
 * Runs work concurrently with at most a fixed number in flight: enough to overlap slow requests (a delete held by a
 * slow admission webhook), few enough that one namespace's burst does not take every connection of the client.
 */

/** `run` over every item, at most `limit` at once; the results in the order of `items`. */
export async function mapBounded<T, R>(
  items: readonly T[],
  limit: number,
  run: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await run(items[i], i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(Math.max(1, limit), items.length) }, lane));
  return results;
}

/**
 * At most `limit` tasks at once, the others waiting in order. For reads and writes of objects a tenant made large
 * (thousands of ownerReferences): each holds a few MiB while it runs, and a namespace's items run concurrently.
 */
export class Gate {
  #running = 0;
  readonly #waiting: (() => void)[] = [];

  constructor(private readonly limit: number) {}

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.#running >= this.limit) await new Promise<void>((go) => this.#waiting.push(go));
    else this.#running++;
    try {
      return await task();
    } finally {
      const next = this.#waiting.shift();
      if (next) next(); // the slot passes to the next task as it is
      else this.#running--;
    }
  }
}
