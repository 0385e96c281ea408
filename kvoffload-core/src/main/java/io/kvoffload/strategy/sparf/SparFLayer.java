package io.kvoffload.strategy.sparf;

import io.kvoffload.DType;
import io.kvoffload.KvShape;
import io.kvoffload.internal.util.ElementCodec;
import io.kvoffload.internal.util.PartialTopK;
import io.kvoffload.internal.util.Softmax;
import io.kvoffload.internal.util.StampSet;
import io.kvoffload.internal.util.TopK;
import io.kvoffload.strategy.FetchPlan;
import io.kvoffload.strategy.LayerSelector;
import io.kvoffload.strategy.UnitReads;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * One layer's SparF selection ({@link SparF}): step 1 asks for the dimension slices of every query
 * head's top-r dimensions, step 2 scores the laid-out tokens from them and adds the best page groups
 * whole. Every buffer is sized when the layer opens, so a step allocates nothing.
 */
final class SparFLayer implements LayerSelector {
    /** The stored element byte order (ElementCodec's). */
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfShort U16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private final int queryHeads;
    private final int kvHeads;
    private final int headDim;
    private final int groupSize; // query heads per KV head (GQA)
    private final DType dtype;
    private final int laidOut;
    private final int slice;
    private final int slices;
    private final int pageTokens;
    private final int pages;
    private final int rank;
    private final int sinkTokens;
    private final int localWindow;
    private final long layoutBytes;
    private final boolean perKvHead;
    /** |q_i| per dimension of the head (or Σ over the KV head's query heads) being ranked. */
    private final float[] absQuery;
    /** Per query head, its top-r dimensions (descending |q|), then their magnitudes. */
    private final int[] dims;
    private final float[] magnitude;
    /** The (KV head, dimension) pairs whose slices this step wants. */
    private final StampSet wanted;
    /** Per query head sharing the current dimensions, its logits over the laid-out tokens. */
    private final float[] logits;
    /** One decoded slice row: a dimension of a KV head's keys over the laid-out tokens. */
    private final float[] row;
    private final float[] scores;
    private final float[] pageScore;
    private final int[] chosen;
    private final PartialTopK topK;

    SparFLayer(KvShape shape, int laidOut, int slice, int pageTokens, int rank, int sinkTokens, int localWindow,
            long layoutBytes, boolean perKvHead) {
        this.queryHeads = shape.queryHeads();
        this.kvHeads = shape.kvHeads();
        this.headDim = shape.headDim();
        this.groupSize = queryHeads / kvHeads;
        this.dtype = shape.dtype();
        this.laidOut = laidOut;
        this.slice = slice;
        this.slices = (laidOut + slice - 1) / slice;
        this.pageTokens = pageTokens;
        this.pages = (laidOut + pageTokens - 1) / pageTokens;
        this.rank = rank;
        this.sinkTokens = sinkTokens;
        this.localWindow = localWindow;
        this.layoutBytes = layoutBytes;
        this.perKvHead = perKvHead;
        this.absQuery = new float[headDim];
        this.dims = new int[queryHeads * rank];
        this.magnitude = new float[rank];
        this.wanted = new StampSet(kvHeads * headDim);
        this.logits = new float[Math.max(1, (perKvHead ? groupSize : 1) * laidOut)];
        this.row = new float[Math.max(1, laidOut)];
        this.scores = new float[Math.max(1, laidOut)];
        this.pageScore = new float[Math.max(1, pages)];
        this.chosen = new int[Math.max(1, pages)];
        this.topK = new PartialTopK(pages);
    }

    /** Whether this step's budget covers every laid-out token (dense: no scoring, no step 1). */
    private boolean dense(FetchPlan plan) {
        return plan.budget() >= laidOut;
    }

    @Override
    public void planUnits(float[] query, FetchPlan plan, UnitReads reads) {
        if (plan.budget() <= 0 || dense(plan) || laidOut == 0) {
            return;
        }
        wanted.clear(0);
        for (int h = 0; h < queryHeads; h++) {
            int kvh = h / groupSize;
            if (perKvHead && h % groupSize != 0) {
                System.arraycopy(dims, (h - 1) * rank, dims, h * rank, rank); // the KV head's dimensions
                continue;
            }
            java.util.Arrays.fill(absQuery, 0f);
            for (int m = perKvHead ? groupSize : 1, g = 0; g < m; g++) { // GQA: Σ |q| over the KV head's query heads
                int q0 = (h + g) * headDim;
                for (int i = 0; i < headDim; i++) {
                    absQuery[i] += Math.abs(query[q0 + i]);
                }
            }
            topDimensions(h);
            for (int j = 0; j < rank; j++) {
                wanted.add(kvh * headDim + dims[h * rank + j]);
            }
        }
        // Ascending unit order: a (slice, head)'s dimensions are adjacent on its device and merge.
        for (int s = 0; s < slices; s++) {
            for (int kvh = 0; kvh < kvHeads; kvh++) {
                int base = (s * kvHeads + kvh) * headDim;
                for (int i = 0; i < headDim; i++) {
                    if (wanted.contains(kvh * headDim + i)) {
                        reads.add(base + i);
                    }
                }
            }
        }
    }

    @Override
    public void select(float[] query, FetchPlan plan) {
        int budget = plan.budget();
        if (budget <= 0 || laidOut == 0) {
            return;
        }
        plan.ensureCapacity(Math.min(laidOut, budget + pageTokens));
        if (dense(plan)) {
            for (int t = 0; t < laidOut; t++) {
                plan.add(t);
            }
            return;
        }
        score(query, plan.units());
        // Resident tokens (sinks, window) are attended anyway: a page ranks by its other tokens.
        int residentFrom = Math.max(0, plan.tokens() - localWindow);
        int eligible = 0;
        for (int p = 0; p < pages; p++) {
            int from = Math.max(p * pageTokens, sinkTokens), to = Math.min(laidOut, Math.min((p + 1) * pageTokens,
                    residentFrom));
            float best = Float.NEGATIVE_INFINITY;
            for (int t = from; t < to; t++) {
                best = Math.max(best, scores[t]);
            }
            pageScore[p] = best;
            if (best != Float.NEGATIVE_INFINITY) {
                eligible++;
            }
        }
        int k = Math.min(eligible, (budget + pageTokens - 1) / pageTokens);
        // k ≤ the pages with a score, so no unscored page is chosen; ties go to the lower page.
        int n = topK.top(pageScore, 0, pages, k, chosen, 0);
        for (int i = 0; i < n; i++) {
            for (int t = chosen[i] * pageTokens, end = Math.min(laidOut, t + pageTokens); t < end; t++) {
                plan.add(t); // step 2: the page group whole
            }
        }
    }

    /**
     * SparQ's approximate scores of the laid-out tokens, averaged over the query heads, from the
     * slices read. Query heads that share their dimensions (a KV head's, {@link SparF.Dimensions#PER_KV_HEAD})
     * share each decoded slice row.
     */
    private void score(float[] query, UnitReads reads) {
        java.util.Arrays.fill(scores, 0, laidOut, 0f);
        int sharing = perKvHead ? groupSize : 1;
        for (int h0 = 0; h0 < queryHeads; h0 += sharing) {
            int kvh = h0 / groupSize;
            java.util.Arrays.fill(logits, 0, sharing * laidOut, 0f);
            for (int j = 0; j < rank; j++) {
                int i = dims[h0 * rank + j];
                decodeRow(reads, (kvh * headDim + i));
                for (int g = 0; g < sharing; g++) {
                    float qi = query[(h0 + g) * headDim + i];
                    int o = g * laidOut;
                    for (int t = 0; t < laidOut; t++) {
                        logits[o + t] += qi * row[t];
                    }
                }
            }
            for (int g = 0; g < sharing; g++) {
                accumulate(query, h0 + g, g * laidOut);
            }
        }
    }

    /** {@code K[:, head, dim]} of the laid-out tokens into {@link #row}, from the slices of {@code headDimIndex = head · headDim + dim}. */
    private void decodeRow(UnitReads reads, int headDimIndex) {
        MemorySegment data = reads.data();
        for (int s = 0; s < slices; s++) {
            long at = reads.offset(s * kvHeads * headDim + headDimIndex);
            int from = s * slice, n = Math.min(slice, laidOut - from);
            switch (dtype) { // outside the loop: each loop is a plain load-and-convert the JIT unrolls
                case F32 -> MemorySegment.copy(data, F32, at, row, from, n);
                case F16 -> {
                    for (int t = 0; t < n; t++) {
                        row[from + t] = Float.float16ToFloat(data.get(U16, at + 2L * t));
                    }
                }
                case BF16 -> {
                    for (int t = 0; t < n; t++) {
                        row[from + t] = ElementCodec.fromBf16(data.get(U16, at + 2L * t));
                    }
                }
            }
        }
    }

    /** Query head {@code h}'s softmax over its logits at {@code o}, with SparQ's temperature, added to the scores. */
    private void accumulate(float[] query, int h, int o) {
        int q0 = h * headDim;
        float l1All = 0, l1Kept = 0;
        for (int i = 0; i < headDim; i++) {
            l1All += Math.abs(query[q0 + i]);
        }
        for (int j = 0; j < rank; j++) {
            l1Kept += Math.abs(query[q0 + dims[h * rank + j]]);
        }
        // SparQ's temperature: as if the kept dimensions carried the query's whole L1 mass.
        float temperature = l1All > 0 && l1Kept > 0 ? (float) (1.0 / Math.sqrt(headDim * (double) l1Kept / l1All)) : 1f;
        for (int t = 0; t < laidOut; t++) {
            logits[o + t] *= temperature;
        }
        float norm = Softmax.exponentiate(logits, o, laidOut) / queryHeads;
        for (int t = 0; t < laidOut; t++) {
            scores[t] += logits[o + t] * norm;
        }
    }

    /** The {@code rank} dimensions of largest {@link #absQuery} into query head {@code h}'s {@link #dims} (ties: lower dimension). */
    private void topDimensions(int h) {
        int o = h * rank;
        int kept = 0;
        for (int i = 0; i < headDim; i++) {
            kept = TopK.offer(magnitude, dims, o, kept, rank, absQuery[i], i);
        }
    }

    /** The unit layout's tables and this selector's per-step arrays; K itself stays on the SSDs. */
    @Override
    public long memoryBytes() {
        return layoutBytes + 4L * (dims.length + magnitude.length + absQuery.length + wanted.capacity() + logits.length + row.length
                + scores.length + pageScore.length + 2L * chosen.length);
    }
}
