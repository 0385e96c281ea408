package io.kvoffload.internal.swarm;

/**
 * How Algorithm 1's cluster expansion (Step 4) decides whether a candidate joins a medoid's cluster.
 * Swarm's Fig. 12 compares the published rule with a "Medoid-Only" ablation.
 */
public enum ExpansionRule {
    /**
     * Eq. 5 (the paper): a candidate joins when its mean co-activation distance to all members so
     * far is at most τ, so a cluster's members are co-activated with each other, not only with the
     * medoid.
     */
    MEAN_DISTANCE,
    /**
     * Ablation "Medoid-Only": every candidate within τ of the medoid joins (up to the size cap),
     * whatever its distance to the other members. Clusters get looser, so one activated cluster
     * brings more entries the query does not need.
     */
    MEDOID_ONLY
}
