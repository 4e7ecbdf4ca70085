/** The binary min-heap of the work queue's places (lib/controller/queue.ts), ordered by place, then by order of adds. */

/** A key's place in one priority of the work queue (queue.ts): when it counts as added, then the order of adds. */
export type Entry<K> = { key: K; at: number; seq: number };

const before = <K>(a: Entry<K>, b: Entry<K>) => a.at < b.at || (a.at === b.at && a.seq < b.seq);

/** Adds `e` to the binary min-heap `heap` (ordered by `at`, then `seq`). */
export function push<K>(heap: Entry<K>[], e: Entry<K>): void {
  heap.push(e);
  let i = heap.length - 1;
  while (i > 0) {
    const parent = (i - 1) >> 1;
    if (!before(heap[i], heap[parent])) break;
    [heap[i], heap[parent]] = [heap[parent], heap[i]];
    i = parent;
  }
}

/** Removes and returns the first entry of the binary min-heap `heap`. */
export function pop<K>(heap: Entry<K>[]): Entry<K> | undefined {
  const top = heap[0];
  const last = heap.pop();
  if (!heap.length || last === undefined) return top;
  heap[0] = last;
  for (let i = 0;;) {
    const l = 2 * i + 1, r = l + 1;
    let m = i;
    if (l < heap.length && before(heap[l], heap[m])) m = l;
    if (r < heap.length && before(heap[r], heap[m])) m = r;
    if (m === i) break;
    [heap[i], heap[m]] = [heap[m], heap[i]];
    i = m;
  }
  return top;
}
