/**
 * Whether a managed object is judged as its cache reads it (CacheEvents.judge, lib/controller/arrival_judge.ts):
 * only in an initial state (the first list, a relist after 410 Gone), where every object arrives at once and would
 * otherwise keep its content until a unit gets to its namespace. A watch event after it is left to the unit, which
 * merges a burst of them into one judgement: a tenant writing a synced object a hundred times a second costs a
 * decode per write, not a rendering and a hash. Not while espejo writes the object either: that is most likely the
 * echo of the write, whose reply is judged anyway. Only an object an item names is judged (decodeManaged).
 */
export const judgedOnArrival = (initial: boolean, writing: boolean): boolean => initial && !writing;
