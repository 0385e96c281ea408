package io.kvoffload;

import io.kvoffload.internal.util.Checks;
import io.kvoffload.internal.util.ElementCodec;
import java.lang.foreign.MemorySegment;

/**
 * Reference CPU attention over a {@link KvView}: per query head, softmax of
 * {@code q·k/√headDim} over the view's rows (sinks, selected tokens, window) and the weighted sum
 * of their values, with grouped-query attention (query head {@code h} reads KV head
 * {@code h / groupSize}). It is what a sparse GPU kernel computes from the same view, written for
 * clarity, so the end-to-end error against dense attention can be measured. Over a view holding
 * every token it equals dense attention up to float rounding.
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
        Checks.notNull("view", view);
        Checks.notNull("query", query);
        Checks.notNull("out", out);
        int d = shape.headDim();
        int qh = shape.queryHeads();
        if (!view.shape().equals(shape)) {
            throw new IllegalArgumentException("view has shape " + view.shape() + " but this kernel was made for " + shape);
        }
        if (query.length != qh * d || out.length != qh * d) {
            throw new IllegalArgumentException("query.length = " + query.length + " and out.length = " + out.length
                    + " must both be queryHeads × headDim = " + qh * d);
        }
        int n = view.tokenCount();
        if (n == 0) {
            throw new IllegalArgumentException("view holds no tokens; allowed: at least one");
        }
        if (logits.length < n) {
            logits = new float[n];
        }
        DType dt = shape.dtype();
        int es = dt.bytes();
        int group = shape.groupSize();
        java.util.Arrays.fill(out, 0f);
        for (int h = 0; h < qh; h++) {
            int kvh = h / group;
            // The view's own slices: no per-step scope to create, and the view is open throughout.
            MemorySegment keys = view.rawKeys(kvh);
            MemorySegment values = view.rawValues(kvh);
            float max = Float.NEGATIVE_INFINITY;
            for (int i = 0; i < n; i++) {
                ElementCodec.read(dt, keys, (long) i * d * es, key, 0, d);
                float s = 0;
                for (int j = 0; j < d; j++) {
                    s += query[h * d + j] * key[j];
                }
                s *= scale;
                logits[i] = s;
                max = Math.max(max, s);
            }
            double sum = 0;
            for (int i = 0; i < n; i++) {
                float e = (float) Math.exp(logits[i] - max);
                logits[i] = e;
                sum += e;
            }
            float norm = (float) (1.0 / sum);
            for (int i = 0; i < n; i++) {
                ElementCodec.read(dt, values, (long) i * d * es, value, 0, d);
                float w = logits[i] * norm;
                for (int j = 0; j < d; j++) {
                    out[h * d + j] += w * value[j];
                }
            }
        }
    }
}
