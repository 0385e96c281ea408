package io.kvoffload.internal.swarm;

/**
 * The denominator {@code Z} of Swarm's Eq. 2 [Swarm §5.1], {@code P(i,j) = f(i,j) / Z}. The paper's
 * text lost the formula; a translation normalises by the sum of all counts, a worked example by the
 * number of profiled queries (docs/architecture.md, References). Both are offered; the default is
 * {@link #perQuery()}.
 *
 * <p>{@code Z} is a positive integer so that every distance {@code 1 − f/Z} is an exact rational and
 * the clustering compares distances with the radius exactly, not up to rounding.
 */
@FunctionalInterface
public interface CoActivationNormaliser {

    /**
     * @param queries number of profiled queries
     * @param activationSetSizes distinct entries activated by each query
     * @return {@code Z ≥ 1}
     */
    long normaliser(int queries, long[] activationSetSizes);

    /**
     * {@code Z} = number of profiled queries: {@code P(i,j)} is the fraction of queries that activate
     * both entries, so a radius of 0.35 means "co-activated by at least 65% of the queries".
     */
    static CoActivationNormaliser perQuery() {
        return Standard.PER_QUERY;
    }

    /**
     * {@code Z} = the sum of all pair counts {@code Σ_{i<j} f(i,j) = Σ_q C(|A_q|, 2)} (at least 1).
     * Every {@code P} is then tiny and every distance close to 1, so use it with a radius derived
     * from a quantile ({@link ClusterRadius#quantile}).
     */
    static CoActivationNormaliser sumOfCounts() {
        return Standard.SUM_OF_COUNTS;
    }

    /** The two normalisers the paper's readings give. */
    enum Standard implements CoActivationNormaliser {
        PER_QUERY {
            @Override
            public long normaliser(int queries, long[] activationSetSizes) {
                return queries;
            }
        },
        SUM_OF_COUNTS {
            @Override
            public long normaliser(int queries, long[] activationSetSizes) {
                long sum = 0;
                for (long k : activationSetSizes) {
                    sum = Math.addExact(sum, k * (k - 1) / 2);
                }
                return Math.max(1, sum);
            }
        }
    }
}
