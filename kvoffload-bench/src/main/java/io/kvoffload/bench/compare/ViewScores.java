package io.kvoffload.bench.compare;

import io.kvoffload.KvShape;
import io.kvoffload.KvView;
import io.kvoffload.attention.QualityMetrics;
import io.kvoffload.internal.storage.HeadShards;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * What {@code compare} measures on one view, for views whose rows hold every KV head and for
 * per-head views ({@link KvView#partialRows()}), where a row counts only for the heads it holds.
 */
final class ViewScores {
    private ViewScores() {}

    /** The positions of the view's rows, in row order. */
    static int[] positions(KvView v) {
        int[] p = new int[v.tokenCount()];
        for (int r = 0; r < p.length; r++) {
            p[r] = v.position(r);
        }
        return p;
    }

    /** Rows a view attends, in whole entries: a row that holds some KV heads counts their share. */
    static double entryRows(KvView v) {
        if (!v.partialRows()) {
            return v.tokenCount();
        }
        int kv = v.shape().kvHeads();
        long all = HeadShards.headBits(0, kv);
        double rows = 0;
        for (int r = 0; r < v.tokenCount(); r++) {
            rows += Long.bitCount(v.headMask(r) & all) / (double) kv;
        }
        return rows;
    }

    /** Top-k recall of a per-head view: each KV head's rows against the top tokens, averaged over KV heads. */
    static double headTopK(KvView v, float[] weights, int k) {
        int kv = v.shape().kvHeads();
        double sum = 0;
        int[] rows = new int[v.tokenCount()];
        for (int h = 0; h < kv; h++) {
            int n = 0;
            for (int r = 0; r < rows.length; r++) {
                if ((v.headMask(r) >>> h & 1) != 0) {
                    rows[n++] = v.position(r);
                }
            }
            sum += QualityMetrics.topKRecall(weights, Arrays.copyOf(rows, n), k);
        }
        return sum / kv;
    }

    /**
     * Rows whose K or V differ from the source ({@code keys}, {@code values}: token-major, the
     * layer's KV as stored) at their position (must be 0); a head a row does not hold is not compared.
     */
    static long mismatches(KvView v, MemorySegment keys, MemorySegment values) {
        KvShape shape = v.shape();
        int kv = shape.kvHeads();
        int row = shape.headDim() * shape.dtype().bytes();
        long bad = 0;
        for (int r = 0; r < v.tokenCount(); r++) {
            int p = v.position(r);
            long held = v.headMask(r);
            for (int h = 0; h < kv; h++) {
                if ((held >>> h & 1) == 0) {
                    continue;
                }
                long src = ((long) p * kv + h) * row;
                if (v.keys(h).asSlice((long) r * row, row).mismatch(keys.asSlice(src, row)) != -1
                        || v.values(h).asSlice((long) r * row, row).mismatch(values.asSlice(src, row)) != -1) {
                    bad++;
                    break;
                }
            }
        }
        return bad;
    }
}
