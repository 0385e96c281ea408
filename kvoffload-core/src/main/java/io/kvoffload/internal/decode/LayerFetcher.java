package io.kvoffload.internal.decode;

import java.lang.foreign.MemorySegment;

/**
 * One layer's online phase inside a decoder: what a strategy keeps per layer (its index, window,
 * caches) and how one step is selected, planned, submitted and gathered. The decoder owns the
 * views, the pipeline slots, the thread ownership and the statistics; it opens one fetcher per
 * layer on first use (through {@link PipelineStrategy} or, for plug-in strategies, a
 * {@link PlannedLayer}) and keeps at most one fetch per layer in flight.
 */
public interface LayerFetcher extends AutoCloseable {
    /** The layer's DRAM window (sinks and newest tokens). */
    DramWindow window();

    /** Selects for {@code query}, submits the reads (one batch) and copies DRAM-resident rows into {@code view}. */
    void start(EntryFetch slot, ViewBuffer view, float[] query);

    /**
     * Fetches exactly {@code positions[0..count)} (validated by the decoder) through the same path.
     *
     * @throws IllegalStateException if this layer's layout cannot serve single positions
     */
    void startPositions(EntryFetch slot, ViewBuffer view, int[] positions, int count);

    /** Waits for the reads of the fetch {@link #start} began, verifies and gathers them, then updates caches. */
    void finish(EntryFetch slot, ViewBuffer view);

    /** Tokens {@code [before, before + n)} were appended to the sequence; {@code keys}/{@code values} hold them. */
    void appended(MemorySegment keys, MemorySegment values, int before, int n);

    /**
     * Sets the DRAM this layer's elastic cache (its share of the engine's elastic pool) may hold,
     * between steps; returns the bytes it holds afterwards (whole units). Layers without one hold 0.
     *
     * @throws io.kvoffload.KvDramExhaustedException when growing finds no room (nothing changes)
     */
    default long resizeCache(long bytes) {
        return 0;
    }

    /** Bytes of elastic units this layer's cache holds now. */
    default long cacheHeldBytes() {
        return 0;
    }

    /** Adds the layer's gauges (DRAM held, cache hits). */
    void addGauges(DecodeCounters.Gauges gauges);

    @Override
    void close();
}
