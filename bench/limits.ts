/**
 * What the bench reports of the controller inside the Go espejo's container limits (memory 100Mi, CPU 300m; the group
 * is testenv/cgroup.ts). A process killed by the memory limit is counted, not hidden: that is the failure this
 * measures.
 */
export interface LimitFigures {
  memoryLimitMiB: number;
  cpuQuota: number;
  /** Peak of anonymous resident memory (heap, allocator), sampled every 100 ms. */
  peakAnonMiB: number;
  /** Peak resident memory (anonymous and file-backed), the kernel's VmHWM. */
  peakRssMiB: number;
  /** The cgroup's peak usage (resident memory and page cache charged to it). */
  cgroupPeakMiB: number;
  oomKills: number;
}
