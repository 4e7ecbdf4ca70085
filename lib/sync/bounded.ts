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
