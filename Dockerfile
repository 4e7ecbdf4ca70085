# espejo: compiled into one binary with `deno compile` in a builder stage, shipped on distroless (glibc, no shell).
# Build: docker build -t espejo .   (the builder needs network access to fetch npm packages and denort)

# The Deno release the project is developed and tested with (deno.lock is written by it).
ARG DENO_VERSION=2.9.6
FROM denoland/deno:${DENO_VERSION} AS build
WORKDIR /src
COPY deno.json deno.lock deno.permissions ./
COPY main.ts ./
COPY lib ./lib
# Only what the controller needs: network, environment (KUBECONFIG, WATCH_NAMESPACE, ...), reading the service
# account token and kubeconfig, and the hostname (for the leader election identity). V8's optimize-for-size keeps
# the heap close to the live data (about 100 MiB resident at 20,000 cached objects instead of 150-180 MiB after a
# burst), for some extra CPU in bursts; the flag is built into the binary.
# The permission set lives in deno.permissions, which the process tests run main.ts with too.
RUN deno compile $(cat deno.permissions) --v8-flags=--optimize-for-size --output /out/espejo main.ts

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /out/espejo /usr/local/bin/espejo
# glibc's allocator: two arenas instead of one per thread, and freed memory given back to the system at once rather
# than kept for reuse. Measured at 3,600 objects: 29 instead of 36 MiB anonymous memory at rest, 38 instead of 44
# at the peak, at no measurable CPU cost (README, Performance). The bench and the process tests read this line.
ENV MALLOC_ARENA_MAX=2 MALLOC_TRIM_THRESHOLD_=65536 MALLOC_MMAP_THRESHOLD_=65536
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["/usr/local/bin/espejo"]
