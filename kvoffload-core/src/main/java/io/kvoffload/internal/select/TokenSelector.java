package io.kvoffload.internal.select;

/**
 * Predicts which tokens of one layer matter for a query: the common shape of every strategy the
 * library compares (Swarm's medoid index, KVSwap's group predictor, Quest, InfLLM, PQCache,
 * ClusterKV, SparQ/SparF, the exact oracle). A selector is built once per layer from that layer's
 * keys (its offline phase) and then called once per decoding step.
 *
 * <p>Implementations must not allocate in {@link #select} once warmed up (the decode hot path), and
 * are used by one thread at a time.
 */
public interface TokenSelector {
    /** Short name used in configuration and reports, e.g. {@code "quest"}. */
    String name();

    /**
     * Selects the tokens to fetch for {@code query} ({@code queryHeads × headDim} floats, head after
     * head), at most {@code budgetTokens} of them unless the strategy's unit (a page, a group, a
     * cluster) makes it round up; writes distinct token positions into {@code out} and returns how
     * many. {@code out} must hold at least {@link #maxSelected(int)} positions.
     */
    int select(float[] query, int budgetTokens, int[] out);

    /** The most positions {@link #select} may write for this budget. */
    int maxSelected(int budgetTokens);

    /** DRAM this selector's index holds, in bytes (medoids, page summaries, codebooks, …). */
    long indexBytes();
}
