/** Bounded concurrency: `fn` over `items`, at most `concurrency` at a time (the API server and etcd share two cores). */
export async function pool<T>(items: T[], concurrency: number, fn: (t: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < items.length) await fn(items[next++]);
  }));
}
