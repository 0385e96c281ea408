/**
 * Swarm's offline phase (paper §5): co-activation profiling ({@link CoActivationProfile}, Eq. 2–3),
 * correlation-aware clustering with replication ({@link CoActivationClustering}, Eq. 4–5 and
 * Algorithm 1), the DRAM medoid index with its route table ({@link MedoidIndex}) and round-robin
 * multi-SSD placement ({@link ClusterPlacement}, Eq. 7).
 *
 * <p>Not exported from the module: the engine reaches it through the public API (the benchmarks run
 * on the class path).
 */
package io.kvoffload.internal.swarm;
