package io.kvoffload;

import io.kvoffload.internal.decode.SharedPlan;
import io.kvoffload.internal.util.Checks;
import io.kvoffload.internal.util.SingleOwner;
import java.util.Arrays;
import java.util.List;

/**
 * Batched decoding: the decoders of several sequences of one engine (continuous batching) fetch a
 * layer together. {@link #prefetch} runs each sequence's selection as its own
 * {@link KvDecoder#prefetch(int, float[])} would, but plans all their reads as one load over the
 * SSDs (each sequence's scheduler counts what the others already put on each device). Each
 * sequence's reads go out as soon as it is planned, so the SSDs work on the first sequences while
 * the later ones select, and the copies of DRAM-resident rows (sinks, window, cache) wait for each
 * view's {@code await}, behind every sequence's reads. (A single submission after all the
 * selections, measured at batch 8, left the SSDs idle for the selections: docs/benchmarks.md.)
 *
 * <pre>{@code
 * KvBatch batch = KvBatch.of(decoders);           // one decoder per sequence, same engine
 * KvView[] views = new KvView[batch.size()];
 * batch.prefetch(layer, queries, views);          // queries[i] for decoders.get(i)
 * for (KvView v : views) {
 *     try (KvView ready = v.await()) { attend(ready); }
 * }
 * }</pre>
 *
 * <p>Each view is awaited on its own, exactly like a view of its decoder: it is verified and
 * gathered as its reads land, and a checksum or read failure (with the same failover to a replica)
 * fails only the views whose reads failed. Pipelining works as with one decoder: a second
 * {@code prefetch} (another layer) may be in flight while the first batch's views are held, within
 * each decoder's {@link DecodeOptions#pipelineDepth()}. Layers served by KVSwap's group layout are
 * selected and gathered the same way but submit their reads per sequence.
 *
 * <p>The batch and all its views are used by one thread at a time. The batch does not own the
 * decoders: close them as usual (with their views closed or awaited first). After the first steps
 * a prefetch allocates nothing.
 */
public final class KvBatch {
    private final KvDecoder[] decoders;
    private final int layers;
    private final int queryLength;
    private SharedPlan[] plans = new SharedPlan[0];
    private final SingleOwner owner = new SingleOwner();

    private KvBatch(KvDecoder[] decoders) {
        this.decoders = decoders;
        this.layers = decoders[0].layerCount();
        this.queryLength = decoders[0].queryLength();
    }

    /**
     * A batch of {@code decoders}: at least one, all open, distinct, of sequences of one engine and
     * of one shape's layer count and query size.
     */
    public static KvBatch of(List<KvDecoder> decoders) {
        Checks.notNull("decoders", decoders);
        return of(decoders.toArray(new KvDecoder[0]));
    }

    /** {@link #of(List)}. */
    public static KvBatch of(KvDecoder... decoders) {
        Checks.notNull("decoders", decoders);
        if (decoders.length == 0) {
            throw new IllegalArgumentException("decoders is empty; allowed: one or more decoders");
        }
        KvDecoder[] d = decoders.clone();
        for (int i = 0; i < d.length; i++) {
            if (d[i] == null) {
                throw new IllegalArgumentException("decoders[" + i + "] is null; allowed: open decoders");
            }
            if (d[i].isClosing()) {
                throw new IllegalStateException("decoders[" + i + "]: " + d[i].closedMessage());
            }
            if (!d[i].sameEngine(d[0])) {
                throw new IllegalArgumentException("decoders[" + i + "] (" + d[i] + ") belongs to another engine than"
                        + " decoders[0] (" + d[0] + "); allowed: decoders of one engine, whose SSDs one load"
                        + " balances");
            }
            if (d[i].layerCount() != d[0].layerCount() || d[i].queryLength() != d[0].queryLength()) {
                throw new IllegalArgumentException("decoders[" + i + "] has " + d[i].layerCount() + " layers and"
                        + " queries of " + d[i].queryLength() + " floats, decoders[0] " + d[0].layerCount() + " and "
                        + d[0].queryLength() + "; allowed: sequences of one model shape");
            }
            for (int j = 0; j < i; j++) {
                if (d[j] == d[i]) {
                    throw new IllegalArgumentException("decoders[" + i + "] is decoders[" + j + "] (" + d[i] + ");"
                            + " allowed: one decoder per sequence, each once");
                }
            }
        }
        return new KvBatch(d);
    }

    /** Number of sequences. */
    public int size() {
        return decoders.length;
    }

    /** The decoder of sequence {@code i}. */
    public KvDecoder decoder(int i) {
        return decoders[Checks.index("i", i, decoders.length)];
    }

    /**
     * Starts fetching {@code layer} for every sequence — {@code queries[i]} for decoder {@code i},
     * as {@link KvDecoder#prefetch(int, float[])} takes it — as one load over the SSDs, and returns at once
     * with view {@code i} in {@code views[i]}; each is usable after its {@link KvView#await()}. If a
     * sequence cannot start (its decoder closed, the layer already in flight, no free view), the
     * sequences started before it are closed again and the exception names it.
     *
     * @param queries one query per sequence, {@code queryHeads × headDim} finite floats each
     * @param views receives the views; at least {@link #size()} long
     */
    public void prefetch(int layer, float[][] queries, KvView[] views) {
        boolean owned = owner.enter(this);
        try {
            Checks.index("layer", layer, layers);
            checkArguments(queries, views);
            SharedPlan s = freePlan();
            s.begin();
            int started = 0;
            RuntimeException failure = null;
            try {
                for (; started < decoders.length; started++) {
                    views[started] = decoders[started].prefetchShared(layer, queries[started], s);
                }
            } catch (RuntimeException e) {
                failure = e;
            }
            s.seal();
            if (failure != null) {
                // The started sequences are closed again (after their reads finished), so their decoders stay usable.
                for (int i = 0; i < started; i++) {
                    views[i].close();
                    views[i] = null;
                }
                throw named(failure, started, layer);
            }
        } finally {
            if (owned) {
                owner.exit();
            }
        }
    }

    private RuntimeException named(RuntimeException e, int sequence, int layer) {
        String msg = "sequence " + sequence + " of the batch (" + decoders[sequence] + ") could not start layer "
                + layer + ": " + e.getMessage();
        if (e instanceof IllegalArgumentException) {
            return new IllegalArgumentException(msg, e);
        }
        if (e instanceof IllegalStateException) {
            return new IllegalStateException(msg, e);
        }
        return e;
    }

    private void checkArguments(float[][] queries, KvView[] views) {
        Checks.notNull("queries", queries);
        Checks.notNull("views", views);
        if (queries.length != decoders.length) {
            throw new IllegalArgumentException("queries.length = " + queries.length + "; allowed: " + decoders.length
                    + " (one query per sequence of the batch)");
        }
        if (views.length < decoders.length) {
            throw new IllegalArgumentException("views.length = " + views.length + "; allowed: at least "
                    + decoders.length + " (one view per sequence of the batch)");
        }
        for (int i = 0; i < queries.length; i++) {
            float[] q = queries[i];
            if (q == null) {
                throw new IllegalArgumentException("queries[" + i + "] is null; allowed: " + queryLength + " floats");
            }
            if (q.length != queryLength) {
                throw new IllegalArgumentException("queries[" + i + "].length = " + q.length + "; allowed: "
                        + queryLength + " (queryHeads × headDim)");
            }
            for (int k = 0; k < q.length; k++) {
                if (!Float.isFinite(q[k])) {
                    throw new IllegalArgumentException("queries[" + i + "][" + k + "] = " + q[k]
                            + "; allowed: finite values");
                }
            }
        }
    }

    /** A plan none of whose members is still fetching (one per batch in flight, kept for reuse). */
    private SharedPlan freePlan() {
        for (SharedPlan s : plans) {
            if (s.idle()) {
                return s;
            }
        }
        plans = Arrays.copyOf(plans, plans.length + 1);
        return plans[plans.length - 1] = decoders[0].newSharedPlan();
    }

    @Override
    public String toString() {
        return "KvBatch{" + decoders.length + " sequences}";
    }
}
