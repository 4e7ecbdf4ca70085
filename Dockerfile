# espejo: compiled into one binary with `deno compile` in a builder stage, shipped on distroless (glibc, no shell).
# Build: docker build -t espejo .   (the builder needs network access to fetch npm packages and denort)

# The Deno release the project is developed and tested with (deno.lock is written by it).
ARG DENO_VERSION=2.9.6
FROM denoland/deno:${DENO_VERSION} AS build
WORKDIR /src
COPY deno.json deno.lock deno.permissions deno.v8-flags ./
COPY main.ts ./
COPY lib ./lib
# Only what the controller needs (deno.permissions): network, environment (KUBECONFIG, WATCH_NAMESPACE, ...), reading
# the service account token and kubeconfig, and the hostname (for the leader election identity).
# V8 in lite mode (deno.v8-flags): no JIT compilers (so no optimized code, no compiler zones, fewer of the runtime's
# code pages touched) and bytecode flushed when unused. Measured with the same code at 25,000 objects inside
# 100Mi/300m, against --optimize-for-size: 82 instead of 95 MiB resident at rest, 52 instead of 61 MiB anonymous at the
# peak, for a fifth more CPU in bursts (23 instead of 19 s to converge; docs/performance.md). The controller's work
# is JSON, hashing and requests, which run in native code either way. `--expose-gc` lets the controller give the heap's
# free pages back after a burst, once quiet (lib/controller/memory_return.ts): measured after a restart at 120,000
# objects, 87 instead of 99 MiB resident at rest.
# Both files are read by the process tests and the bench too, so what they run is what ships.
RUN deno compile $(cat deno.permissions) $(cat deno.v8-flags) --output /out/espejo main.ts

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /out/espejo /usr/local/bin/espejo
# glibc's allocator: two arenas instead of one per thread, and freed memory given back to the system at once rather
# than kept for reuse. Measured at 3,600 objects: 29 instead of 36 MiB anonymous memory at rest, 38 instead of 44
# at the peak, at no measurable CPU cost (docs/performance.md). The bench and the process tests read this line.
ENV MALLOC_ARENA_MAX=2 MALLOC_TRIM_THRESHOLD_=65536 MALLOC_MMAP_THRESHOLD_=65536
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["/usr/local/bin/espejo"]
