package io.kvoffload.attention;

import io.kvoffload.DType;
import io.kvoffload.KvShape;
import io.kvoffload.KvView;
import io.kvoffload.internal.decode.AttentionArgs;
import io.kvoffload.internal.decode.ViewAccess;
import io.kvoffload.internal.util.Checks;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * The decode-step attention kernel for engines: one query token's attention over a {@link KvView}
 * (F32, F16 or BF16 rows, grouped-query attention) plus extra rows given as floats — the current
 * token's K and V, which the engine has computed but which are not in the view yet, so that step
 * {@code t} attends token {@code t}. It computes exactly what {@link io.kvoffload.SparseAttention}
 * computes, bit for bit: the same products summed in the same order, with the same {@code exp} and
 * normalisation; only the loops are arranged for speed.
 *
 * <p><b>How it is fast without the Vector API.</b> Each KV head is processed in blocks of rows:
 * a block of keys is decoded once into a transposed float scratch ({@code headDim × block}), so the
 * scores of the block become, for each query head of the group and each dimension {@code j}, the
 * update {@code s[i] += q[j] · kᵀ[j][i]} over the block's rows — a loop without a reduction, which
 * HotSpot's C2 compiles to SIMD instructions (the reference's per-row dot product is a sequential
 * float reduction, which it may not reorder and so does not vectorise). The weighted sum of values
 * is an update {@code out[j] += w · v[j]} per row, vectorised the same way. Each key and value
 * row is decoded once per KV head, not once per query head. The {@code exp} of the softmax stays
 * {@link Math#exp}, scalar, so the result matches the reference exactly; it is a visible part of the
 * cost at short head dimensions. The {@code jdk.incubator.vector} module is not needed.
 *
 * <p><b>Layout of rows given as floats.</b> {@code rows × kvHeads × headDim} floats, row after
 * row, KV head after KV head: the layout of {@link io.kvoffload.KvSequence#appendKv(int, float[],
 * float[])}. Keys must already carry their rotary position encoding, as the view's do.
 *
 * <p>An instance owns its scratch (grown to the largest call seen, or sized up front with
 * {@link #DecodeAttention(KvShape, int)}): in steady state a call allocates nothing. One thread at
 * a time; an engine keeps one per decoding thread.
 */
public final class DecodeAttention {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfShort U16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    /** Scratch bytes of one decoded key block: half of a 32 KiB L1 data cache. */
    private static final int BLOCK_BYTES = 16 * 1024;

    private final KvShape shape;
    private final DType dtype;
    private final int d;
    private final int kvHeads;
    private final int group;
    private final float scale;
    /** Rows per block. */
    private final int block;
    /** A key block, transposed: {@code [dim][row]}. */
    private final float[] keysT;
    /** A value block, {@code [row][dim]}. */
    private final float[] valueRows;
    /** A block of raw 16-bit elements. */
    private final short[] raw;
    /** Scores, then weights, of one KV head's group: {@code [groupHead][row]}, capacity {@link #capacity} rows. */
    private float[] logits = new float[0];
    private int capacity;

    /** A kernel for {@code shape}; its scratch grows to the largest call. */
    public DecodeAttention(KvShape shape) {
        this(shape, 0);
    }

    /**
     * A kernel for {@code shape} with scratch for {@code maxRows} rows (view rows plus extra rows),
     * so the first calls allocate nothing either.
     *
     * @param maxRows 0..2^24
     */
    public DecodeAttention(KvShape shape, int maxRows) {
        this.shape = Checks.notNull("shape", shape);
        Checks.inRange("maxRows", maxRows, 0, 1 << 24);
        this.dtype = shape.dtype();
        this.d = shape.headDim();
        this.kvHeads = shape.kvHeads();
        this.group = shape.groupSize();
        this.scale = (float) (1.0 / Math.sqrt(d));
        this.block = Math.max(4, Math.min(256, BLOCK_BYTES / (4 * d)));
        this.keysT = new float[d * block];
        this.valueRows = new float[d * block];
        this.raw = new short[d * block];
        ensure(maxRows);
    }

    /** The shape this kernel was made for. */
    public KvShape shape() {
        return shape;
    }

    /**
     * Attention of {@code query} over the view's rows into {@code out}.
     *
     * @param query {@code queryHeads × headDim} floats, head after head
     * @param out receives {@code queryHeads × headDim} floats
     * @throws IllegalStateException if the view is not awaited or is closed
     */
    public void attend(KvView view, float[] query, float[] out) {
        attend(view, query, null, null, 0, out);
    }

    /**
     * Attention of {@code query} over the view's rows followed by {@code extraRows} rows given as
     * floats (see the class comment for their layout), into {@code out}.
     *
     * @param extraKeys at least {@code extraRows × kvHeads × headDim} floats; null when {@code extraRows} is 0
     * @param extraValues laid out like {@code extraKeys}
     */
    public void attend(KvView view, float[] query, float[] extraKeys, float[] extraValues, int extraRows, float[] out) {
        Checks.notNull("view", view);
        int n = AttentionArgs.check(shape, view, query, extraKeys, extraValues, extraRows, out);
        run(view, n, query, extraKeys, extraValues, extraRows, out);
    }

    /**
     * Dense attention over {@code rows} rows held as floats (a DRAM-resident cache, or the tokens
     * of a step that are not stored yet): the same arithmetic as over a view.
     */
    public void attend(float[] keys, float[] values, int rows, float[] query, float[] out) {
        AttentionArgs.check(shape, null, query, keys, values, rows, out);
        run(null, 0, query, keys, values, rows, out);
    }

    private void ensure(int rows) {
        if (capacity < rows) {
            capacity = rows;
            logits = new float[group * rows];
        }
    }

    private void run(KvView view, int n, float[] query, float[] xk, float[] xv, int extra, float[] out) {
        int total = n + extra;
        ensure(total);
        Arrays.fill(out, 0f);
        for (int kvh = 0; kvh < kvHeads; kvh++) {
            int q0 = kvh * group * d;
            for (int g = 0; g < group; g++) {
                Arrays.fill(logits, g * capacity, g * capacity + total, 0f);
            }
            if (n > 0) {
                MemorySegment keys = ViewAccess.keys(view, kvh);
                for (int r = 0; r < n; r += block) {
                    int b = Math.min(block, n - r);
                    decodeKeys(keys, r, b);
                    score(query, q0, r, b);
                }
            }
            int stride = kvHeads * d;
            for (int r = 0; r < extra; r += block) {
                int b = Math.min(block, extra - r);
                transpose(xk, r * stride + kvh * d, stride, b);
                score(query, q0, n + r, b);
            }
            softmax(total);
            if (n > 0) {
                MemorySegment values = ViewAccess.values(view, kvh);
                for (int r = 0; r < n; r += block) {
                    int b = Math.min(block, n - r);
                    decodeValues(values, r, b);
                    accumulate(valueRows, 0, d, r, b, out, q0);
                }
            }
            for (int r = 0; r < extra; r++) {
                accumulate(xv, r * stride + kvh * d, stride, n + r, 1, out, q0);
            }
        }
    }

    /** Rows {@code [row, row+b)} of the view's keys into {@link #keysT}, transposed. */
    private void decodeKeys(MemorySegment keys, int row, int b) {
        int B = block;
        float[] t = keysT;
        if (dtype == DType.F32) {
            float[] v = valueRows; // free until the values pass
            MemorySegment.copy(keys, F32, (long) row * d * 4, v, 0, b * d);
            for (int i = 0; i < b; i++) {
                int s = i * d;
                for (int j = 0; j < d; j++) {
                    t[j * B + i] = v[s + j];
                }
            }
            return;
        }
        short[] r = raw;
        MemorySegment.copy(keys, U16, (long) row * d * 2, r, 0, b * d);
        if (dtype == DType.BF16) {
            for (int i = 0; i < b; i++) {
                int s = i * d;
                for (int j = 0; j < d; j++) {
                    t[j * B + i] = Float.intBitsToFloat(r[s + j] << 16);
                }
            }
        } else {
            for (int i = 0; i < b; i++) {
                int s = i * d;
                for (int j = 0; j < d; j++) {
                    t[j * B + i] = Float.float16ToFloat(r[s + j]);
                }
            }
        }
    }

    /** {@code b} float rows at {@code base} with {@code stride} into {@link #keysT}, transposed. */
    private void transpose(float[] src, int base, int stride, int b) {
        int B = block;
        for (int i = 0; i < b; i++) {
            int s = base + i * stride;
            for (int j = 0; j < d; j++) {
                keysT[j * B + i] = src[s + j];
            }
        }
    }

    /** Rows {@code [row, row+b)} of the view's values into {@link #valueRows}. */
    private void decodeValues(MemorySegment values, int row, int b) {
        int count = b * d;
        float[] v = valueRows;
        if (dtype == DType.F32) {
            MemorySegment.copy(values, F32, (long) row * d * 4, v, 0, count);
            return;
        }
        short[] r = raw;
        MemorySegment.copy(values, U16, (long) row * d * 2, r, 0, count);
        if (dtype == DType.BF16) {
            for (int x = 0; x < count; x++) {
                v[x] = Float.intBitsToFloat(r[x] << 16);
            }
        } else {
            for (int x = 0; x < count; x++) {
                v[x] = Float.float16ToFloat(r[x]);
            }
        }
    }

    /**
     * Scores of the {@code b} transposed keys in {@link #keysT} for every query head of the group,
     * into rows {@code [row, row+b)}: per head, {@code s[i] += q[j]·kᵀ[j][i]} for {@code j} in order,
     * the reference's summation order, then one multiplication by the scale.
     */
    private void score(float[] q, int q0, int row, int b) {
        int B = block;
        float[] t = keysT;
        float[] s = logits;
        for (int g = 0; g < group; g++) {
            int o = g * capacity + row;
            int qa = q0 + g * d;
            for (int j = 0; j < d; j++) {
                float qj = q[qa + j];
                int k = j * B;
                for (int i = 0; i < b; i++) {
                    s[o + i] += qj * t[k + i];
                }
            }
            for (int i = 0; i < b; i++) {
                s[o + i] *= scale;
            }
        }
    }

    /** Per head of the group, the scores of {@code total} rows become softmax weights (the reference's arithmetic). */
    private void softmax(int total) {
        float[] s = logits;
        for (int g = 0; g < group; g++) {
            int o = g * capacity;
            float max = Float.NEGATIVE_INFINITY;
            for (int i = 0; i < total; i++) {
                max = Math.max(max, s[o + i]);
            }
            double sum = 0;
            for (int i = 0; i < total; i++) {
                float e = (float) Math.exp(s[o + i] - max);
                s[o + i] = e;
                sum += e;
            }
            float norm = (float) (1.0 / sum);
            for (int i = 0; i < total; i++) {
                s[o + i] *= norm;
            }
        }
    }

    /** {@code out[head] += w[head][row+i] · v[i]} for the {@code b} value rows at {@code base} with {@code stride}. */
    private void accumulate(float[] v, int base, int stride, int row, int b, float[] out, int q0) {
        float[] w = logits;
        for (int i = 0; i < b; i++) {
            int vs = base + i * stride;
            for (int g = 0; g < group; g++) {
                float wi = w[g * capacity + row + i];
                int o = q0 + g * d;
                for (int j = 0; j < d; j++) {
                    out[o + j] += wi * v[vs + j];
                }
            }
        }
    }
}
