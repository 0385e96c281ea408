package io.kvoffload;

import io.kvoffload.internal.decode.AttentionArgs;
import io.kvoffload.internal.util.Checks;
import io.kvoffload.internal.util.ElementCodec;
import io.kvoffload.internal.util.Softmax;
import java.lang.foreign.MemorySegment;

/**
 * Reference CPU attention over a {@link KvView}: per query head, softmax of
 * {@code q·k/√headDim} over the view's rows (sinks, selected tokens, window) and the weighted sum
 * of their values, with grouped-query attention (query head {@code h} reads KV head
 * {@code h / groupSize}). It is what a sparse GPU kernel computes from the same view, written for
 * clarity, so the end-to-end error against dense attention can be measured. Over a view holding
 * every token it equals dense attention up to float rounding. The fast kernel for engines is
 * {@link io.kvoffload.attention.DecodeAttention}, which reproduces this one bit for bit.
 *
 * <p>Extra rows (the current token's K and V, which an engine has in hand before they are in the
 * view) are attended after the view's rows, in the order given.
 *
 * <p><b>Rows that hold only some KV heads.</b> When the view has {@link KvView#partialRows() partial
 * rows} (a per-head strategy under {@link Placement#HEAD_SHARDED}), query head {@code h} attends
 * only the rows whose {@link KvView#headMask(int) head mask} holds its KV head {@code h / groupSize},
 * plus every extra row: a left-out (row, head) pair takes no part in the softmax (its logit is
 * {@code -∞}, so it moves neither the maximum nor the normaliser) and its value is never read, so
 * the undefined bytes of a head that was not fetched (stale, or NaN) cannot leak into the output.
 * The result equals this kernel over a view holding exactly that head's rows. A query head with no
 * row at all (no row of the view holds its KV head and there are no extra rows) gets an output of
 * zeros. Without partial rows the arithmetic is exactly the whole-view one.
 *
 * <p>An instance keeps its scratch buffers (grown to the largest view seen), so repeated calls
 * allocate nothing; one thread at a time.
 */
public final class SparseAttention {
    private final KvShape shape;
    private final float scale;
    private float[] logits = new float[0];
    private final float[] key;
    private final float[] value;

    public SparseAttention(KvShape shape) {
        this.shape = Checks.notNull("shape", shape);
        this.scale = (float) (1.0 / Math.sqrt(shape.headDim()));
        this.key = new float[shape.headDim()];
        this.value = new float[shape.headDim()];
    }

    /**
     * Computes the attention output of {@code query} over {@code view} into {@code out}.
     *
     * @param query {@code queryHeads × headDim} floats, head after head
     * @param out receives {@code queryHeads × headDim} floats
     */
    public void attend(KvView view, float[] query, float[] out) {
        attend(view, query, null, null, 0, out);
    }

    /**
     * Attention over the view's rows followed by {@code extraRows} rows given as floats.
     *
     * @param extraKeys {@code extraRows × kvHeads × headDim} floats, row after row (the layout of
     *     {@link KvSequence#appendKv(int, float[], float[])}); null when {@code extraRows} is 0
     */
    public void attend(KvView view, float[] query, float[] extraKeys, float[] extraValues, int extraRows, float[] out) {
        Checks.notNull("view", view);
        int n = AttentionArgs.check(shape, view, query, extraKeys, extraValues, extraRows, out);
        int d = shape.headDim();
        int qh = shape.queryHeads();
        int kvHeads = shape.kvHeads();
        int total = n + extraRows;
        if (logits.length < total) {
            logits = new float[total];
        }
        DType dt = shape.dtype();
        int es = dt.bytes();
        int group = shape.groupSize();
        java.util.Arrays.fill(out, 0f);
        // Rows that hold only some KV heads: decided once per view (the masks are read only then).
        boolean partial = n > 0 && view.rows.partialRows();
        for (int h = 0; h < qh; h++) {
            int kvh = h / group;
            // The view's own slices: no per-step scope to create, and the view is open throughout.
            MemorySegment keys = view.rawKeys(kvh);
            MemorySegment values = view.rawValues(kvh);
            int attended = 0;
            for (int i = 0; i < total; i++) {
                if (partial && i < n && !holds(view, i, kvh)) {
                    logits[i] = Float.NEGATIVE_INFINITY; // left out: weight exactly 0, the maximum unmoved
                    continue;
                }
                attended++;
                if (i < n) {
                    ElementCodec.read(dt, keys, (long) i * d * es, key, 0, d);
                } else {
                    System.arraycopy(extraKeys, ((i - n) * kvHeads + kvh) * d, key, 0, d);
                }
                float s = 0;
                for (int j = 0; j < d; j++) {
                    s += query[h * d + j] * key[j];
                }
                s *= scale;
                logits[i] = s;
            }
            if (attended == 0) {
                continue; // no row holds this head: its output stays zeros
            }
            float norm = Softmax.exponentiate(logits, 0, total);
            for (int i = 0; i < total; i++) {
                if (partial && i < n && !holds(view, i, kvh)) {
                    continue; // its value bytes are undefined: never multiplied in, not even by 0
                }
                if (i < n) {
                    ElementCodec.read(dt, values, (long) i * d * es, value, 0, d);
                } else {
                    System.arraycopy(extraValues, ((i - n) * kvHeads + kvh) * d, value, 0, d);
                }
                float w = logits[i] * norm;
                for (int j = 0; j < d; j++) {
                    out[h * d + j] += w * value[j];
                }
            }
        }
    }

    /** Whether row {@code row} of a view with partial rows holds KV head {@code kvh} (below 64 there). */
    private static boolean holds(KvView view, int row, int kvh) {
        return (view.rows.headMask(row) >>> kvh & 1L) != 0;
    }
}
