package io.kvoffload.strategy;

/**
 * One layer's online selection, opened by {@link SelectionStrategy#openLayer} for one decoder. The
 * decoder calls it from one thread at a time: {@link #select} when the engine prefetches the layer,
 * {@link #afterStep} when that fetch's view is ready, {@link #appended} when new tokens' KV was
 * appended through the decoder, and {@link #close} when the decoder closes.
 *
 * <p>{@link #select} and {@link #afterStep} run on the decode hot path: once warmed up they must not
 * allocate (grow buffers when a larger step is first seen, not every step).
 */
public interface LayerSelector extends AutoCloseable {
    /**
     * Chooses the positions one step of this layer attends to, besides the sinks and the window
     * (the pipeline adds those, and serves them from DRAM): add them to {@code plan}, at most
     * {@link FetchPlan#budget()} unless the strategy's unit makes it round up.
     *
     * @param query {@code queryHeads × headDim} finite floats, head after head
     */
    void select(float[] query, FetchPlan plan);

    /**
     * Step 1 of a two-step strategy (InstInfer's SparF): asks for units of the layer's unit layout
     * ({@link UnitLayouts#write}) to read before {@link #select}, which then finds them in
     * {@code plan.units()}. Called before every {@link #select} of a layer that has a unit layout;
     * {@code plan} is begun (its budget and token count are set) and {@code reads} is empty. The
     * pipeline reads the units from the SSDs (scheduled, one batched submission, each verified as
     * it lands) and waits for them inside {@code prefetch}, so their latency is not hidden behind
     * another layer's compute. The default asks for nothing.
     */
    default void planUnits(float[] query, FetchPlan plan, UnitReads reads) {}

    /** The step {@code plan} described has landed in its view (bit-exact and verified). */
    default void afterStep(FetchPlan plan) {}

    /** The layer now holds {@code tokens} tokens: the newest are in the decoder's DRAM window. */
    default void appended(int tokens) {}

    /** DRAM this selector holds (its index), in bytes, for {@link io.kvoffload.DecodeStats}. */
    default long memoryBytes() {
        return 0;
    }

    @Override
    default void close() {}
}
