/**
 * Swarm's offline phase (paper §5): co-activation profiling ({@link CoActivationProfile}, Eq. 2–3),
 * correlation-aware clustering with replication ({@link CoActivationClustering}, Eq. 4–5 and
 * Algorithm 1), the DRAM medoid index with its route table ({@link MedoidIndex}) and round-robin
 * multi-SSD placement ({@link ClusterPlacement}, Eq. 7).
 *
 * <p>Exported only to kvoffload's own modules; the engine reaches it through the public API.
 */
package io.kvoffload.internal.swarm;
