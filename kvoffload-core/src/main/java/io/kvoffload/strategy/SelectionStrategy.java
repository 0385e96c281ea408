package io.kvoffload.strategy;

import io.kvoffload.KvSequence;
import io.kvoffload.internal.sequence.UnitLayouts;

/**
 * A way of choosing, at every decoding step, which KV entries of a layer the attention reads: the
 * plug-in point of the fetch pipeline. The pipeline owns everything else — the DRAM window and
 * sinks, the hot cache, the bucket scheduler, the batched reads, checksum verification and the
 * view — so a strategy only decides <em>which</em> positions, from what it keeps in DRAM.
 *
 * <p>A strategy has two phases, as the papers' systems do:
 * <ul>
 *   <li>offline, {@link #layOut}: the layer's entries are written in a layout the pipeline can read
 *       entry by entry with per-entry checksums (by default consecutive pages of
 *       {@link #pageTokens()} tokens, so selected neighbours merge into one read);</li>
 *   <li>online, {@link #openLayer}: when a decoder first uses a layer it builds the strategy's
 *       per-layer index (page summaries, codebooks, a predictor…) from the layer's stored keys and
 *       then calls {@link LayerSelector#select} once per step.</li>
 * </ul>
 *
 * <p>Strategies are found by {@link #name()} through {@link Strategies#named}: the built-in ones,
 * those registered with {@link Strategies#register}, and those a jar provides through
 * {@link java.util.ServiceLoader} ({@code META-INF/services/io.kvoffload.strategy.SelectionStrategy},
 * or {@code provides} in a module). A decoder uses one with
 * {@link io.kvoffload.DecodeOptions.Builder#strategy}. Implementations are immutable and
 * thread-safe (one instance serves every decoder); their per-layer state lives in the
 * {@link LayerSelector}s they open.
 */
public interface SelectionStrategy {
    /** A short unique name, lower case ({@code "quest"}): how configuration and reports refer to it. */
    String name();

    /**
     * The version of what {@link #layOut} writes; raise it when the layout changes incompatibly, so
     * a store written by an older version is not read with a newer reader's assumptions.
     */
    default int version() {
        return 1;
    }

    /** Tokens per unit of the default layout: a page of consecutive positions (default 16). */
    default int pageTokens() {
        return 16;
    }

    /**
     * The offline phase for {@code layer} of a writable sequence: lays the layer's appended tokens
     * out so the pipeline can fetch single entries. The default writes consecutive pages of
     * {@link #pageTokens()} tokens as the pipeline's unit layout (each entry with its own checksum,
     * each page spread round robin over the SSDs, written all or nothing); {@link KvSequence#commit}
     * persists it.
     *
     * @throws IllegalArgumentException if the layer holds no tokens
     */
    default void layOut(KvSequence sequence, int layer) {
        int tokens = sequence.tokenCount(layer);
        if (tokens == 0) {
            throw new IllegalArgumentException("layer " + layer + " of sequence " + sequence.id()
                    + " holds no tokens; append its KV before laying it out");
        }
        UnitLayouts.write(sequence, layer, pages(tokens, pageTokens()));
    }

    /**
     * Positions {@code [0, tokens)} cut into consecutive pages of {@code pageTokens} (the last may be
     * shorter): the default layout's units.
     *
     * @throws IllegalArgumentException if {@code tokens} or {@code pageTokens} is below 1
     */
    static int[][] pages(int tokens, int pageTokens) {
        if (tokens < 1 || pageTokens < 1) {
            throw new IllegalArgumentException("tokens = " + tokens + ", pageTokens = " + pageTokens
                    + "; allowed: both 1 or more");
        }
        int[][] pages = new int[(tokens + pageTokens - 1) / pageTokens][];
        for (int p = 0; p < pages.length; p++) {
            int from = p * pageTokens;
            pages[p] = new int[Math.min(pageTokens, tokens - from)];
            for (int i = 0; i < pages[p].length; i++) {
                pages[p][i] = from + i;
            }
        }
        return pages;
    }

    /**
     * The online phase of one layer: builds whatever the strategy keeps in DRAM from
     * {@code context} (the layer's stored keys are read from the SSDs on demand, while this call
     * runs). Called once per decoder and layer, off the steady-state path, so it may allocate.
     */
    LayerSelector openLayer(LayerContext context);
}
