package io.kvoffload.attention;

import io.kvoffload.DType;
import io.kvoffload.KvShape;
import io.kvoffload.KvView;
import io.kvoffload.internal.decode.AttentionArgs;
import io.kvoffload.internal.decode.ViewAccess;
import io.kvoffload.internal.util.Checks;
import io.kvoffload.internal.util.Softmax;
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
 * <p><b>Rows that hold only some KV heads.</b> Over a view with {@link KvView#partialRows() partial
 * rows} (a per-head strategy under {@link io.kvoffload.Placement#HEAD_SHARDED}) the query heads of
 * KV head {@code kvh} attend only the rows whose {@link KvView#headMask(int) head mask} has bit
 * {@code kvh}, plus every extra row, exactly as the reference does: a left-out row's score becomes
 * {@code -∞} (weight exactly 0, the maximum and the normaliser unmoved) and its value row is zeroed
 * after decoding, so the undefined bytes of a head that was not fetched (stale, or NaN) never reach
 * the output; adding {@code 0 · 0} leaves the sum bit for bit as skipping the row would. A query head
 * with no row at all (no view row holds its KV head and there are no extra rows) gets zeros. The
 * masks are read once per call; without partial rows none of this runs.
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
    /** Rows per block: C2 unrolls a vectorised loop 4-8 times 16 lanes, so shorter inner loops fall back to scalar code. */
    private static final int BLOCK_ROWS = 256;
    /**
     * Fewer extra rows than this (the current token, a few speculative ones) take a row-at-a-time
     * path of their own: through the blocked methods, one-row calls would teach C2 that their loops
     * are short and cost the view's rows about 3× (measured in AttentionKernelBench).
     */
    private static final int FEW_ROWS = 16;

    private final KvShape shape;
    private final DType dtype;
    private final int d;
    private final int kvHeads;
    private final int group;
    private final float scale;
    /** Rows per block. */
    private final int block;
    /** A key block, transposed: {@code [dim][row]}. */
    private final float[][] keysT;
    /** A value block, {@code [row][dim]}. */
    private final float[][] valueRows;
    /** Raw elements of one block, token-major. */
    private final short[] raw;
    private final float[] rawF32;
    /** Per head of the group, the scores of one block ({@code [groupHead][row]}). */
    private final float[][] blockScores;
    /** Per head of the group, its output while a KV head is processed ({@code [groupHead][dim]}). */
    private final float[][] headOut;
    /** Scores, then weights, of one KV head's group: {@code [groupHead][row]}, capacity {@link #capacity} rows. */
    private float[] logits = new float[0];
    /** The view's head masks, one per row, copied once per call when it has partial rows (capacity {@link #capacity}). */
    private long[] masks = new long[0];
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
        this.block = BLOCK_ROWS;
        this.keysT = new float[d][block];
        this.valueRows = new float[block][d];
        this.raw = new short[d * block];
        this.rawF32 = new float[d * block];
        this.blockScores = new float[group][block];
        this.headOut = new float[group][d];
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
            masks = new long[rows];
        }
    }

    private void run(KvView view, int n, float[] query, float[] xk, float[] xv, int extra, float[] out) {
        int total = n + extra;
        ensure(total);
        int stride = kvHeads * d;
        // Rows that hold only some KV heads: decided once per view, the masks read once.
        boolean partial = n > 0 && ViewAccess.partialRows(view);
        if (partial) {
            for (int r = 0; r < n; r++) {
                masks[r] = ViewAccess.headMask(view, r);
            }
        }
        for (int kvh = 0; kvh < kvHeads; kvh++) {
            int q0 = kvh * group * d;
            if (n > 0) {
                MemorySegment keys = ViewAccess.keys(view, kvh);
                for (int r = 0; r < n; r += block) {
                    int b = Math.min(block, n - r);
                    decodeKeys(keys, r, b);
                    score(query, q0, r, b);
                }
            }
            if (extra < FEW_ROWS) {
                for (int r = 0; r < extra; r++) {
                    scoreRow(query, q0, xk, r * stride + kvh * d, n + r);
                }
            } else {
                for (int r = 0; r < extra; r += block) {
                    int b = Math.min(block, extra - r);
                    transpose(xk, r * stride + kvh * d, stride, b);
                    score(query, q0, n + r, b);
                }
            }
            if (partial && leaveOut(kvh, n) + extra == 0) {
                Arrays.fill(out, q0, q0 + group * d, 0f); // no row holds this KV head: zeros, as the reference
                continue;
            }
            softmax(total);
            for (float[] o : headOut) {
                Arrays.fill(o, 0f);
            }
            if (n > 0) {
                MemorySegment values = ViewAccess.values(view, kvh);
                for (int r = 0; r < n; r += block) {
                    int b = Math.min(block, n - r);
                    decodeValues(values, r, b);
                    if (partial) {
                        zeroLeftOut(kvh, r, b);
                    }
                    accumulate(r, b);
                }
            }
            if (extra < FEW_ROWS) {
                for (int r = 0; r < extra; r++) {
                    accumulateRow(xv, r * stride + kvh * d, n + r);
                }
            } else {
                for (int r = 0; r < extra; r += block) {
                    int b = Math.min(block, extra - r);
                    for (int i = 0; i < b; i++) {
                        System.arraycopy(xv, (r + i) * stride + kvh * d, valueRows[i], 0, d);
                    }
                    accumulate(n + r, b);
                }
            }
            for (int g = 0; g < group; g++) {
                System.arraycopy(headOut[g], 0, out, q0 + g * d, d);
            }
        }
    }

    /** Rows {@code [row, row+b)} of the view's keys into {@link #keysT}, transposed. */
    private void decodeKeys(MemorySegment keys, int row, int b) {
        float[] f = rawF32;
        int count = b * d;
        if (dtype == DType.F32) {
            MemorySegment.copy(keys, F32, (long) row * d * 4, f, 0, count);
        } else {
            short[] r = raw;
            MemorySegment.copy(keys, U16, (long) row * d * 2, r, 0, count);
            if (dtype == DType.BF16) {
                for (int x = 0; x < count; x++) {
                    f[x] = Float.intBitsToFloat(r[x] << 16);
                }
            } else {
                for (int x = 0; x < count; x++) {
                    f[x] = Float.float16ToFloat(r[x]);
                }
            }
        }
        transpose(f, 0, d, b);
    }

    /**
     * {@code b} rows of {@code headDim} floats at {@code base}, {@code stride} apart, into
     * {@link #keysT}. Eight rows at a time: eight sequential read streams and eight adjacent writes
     * per column, where a row at a time would write to every column's array per row.
     */
    private void transpose(float[] src, int base, int stride, int b) {
        float[][] t = keysT;
        int i = 0;
        for (; i + 8 <= b; i += 8) {
            int s0 = base + i * stride;
            int s1 = s0 + stride, s2 = s1 + stride, s3 = s2 + stride;
            int s4 = s3 + stride, s5 = s4 + stride, s6 = s5 + stride, s7 = s6 + stride;
            for (int j = 0; j < d; j++) {
                float[] tj = t[j];
                tj[i] = src[s0 + j];
                tj[i + 1] = src[s1 + j];
                tj[i + 2] = src[s2 + j];
                tj[i + 3] = src[s3 + j];
                tj[i + 4] = src[s4 + j];
                tj[i + 5] = src[s5 + j];
                tj[i + 6] = src[s6 + j];
                tj[i + 7] = src[s7 + j];
            }
        }
        for (; i < b; i++) {
            int s0 = base + i * stride;
            for (int j = 0; j < d; j++) {
                t[j][i] = src[s0 + j];
            }
        }
    }

    /**
     * The view rows {@code [0, n)} whose mask lacks KV head {@code kvh} get score {@code -∞} for every
     * query head of the group; returns how many rows hold the head.
     */
    private int leaveOut(int kvh, int n) {
        int held = 0;
        for (int r = 0; r < n; r++) {
            if ((masks[r] >>> kvh & 1L) != 0) {
                held++;
            } else {
                for (int g = 0; g < group; g++) {
                    logits[g * capacity + r] = Float.NEGATIVE_INFINITY;
                }
            }
        }
        return held;
    }

    /**
     * Zeroes the decoded value rows of block {@code [row, row+b)} whose mask lacks KV head
     * {@code kvh}: their weight is 0 and so is their value, so they add {@code +0} (the sum, which
     * starts at {@code +0}, is never {@code -0}, so it is unchanged) where undefined bytes could add NaN.
     */
    private void zeroLeftOut(int kvh, int row, int b) {
        for (int i = 0; i < b; i++) {
            if ((masks[row + i] >>> kvh & 1L) == 0) {
                Arrays.fill(valueRows[i], 0f);
            }
        }
    }

    /** Rows {@code [row, row+b)} of the view's values into {@link #valueRows}. */
    private void decodeValues(MemorySegment values, int row, int b) {
        if (dtype == DType.F32) {
            for (int i = 0; i < b; i++) {
                MemorySegment.copy(values, F32, (long) (row + i) * d * 4, valueRows[i], 0, d);
            }
            return;
        }
        short[] r = raw;
        MemorySegment.copy(values, U16, (long) row * d * 2, r, 0, b * d);
        for (int i = 0; i < b; i++) {
            float[] v = valueRows[i];
            int s = i * d;
            if (dtype == DType.BF16) {
                for (int j = 0; j < d; j++) {
                    v[j] = Float.intBitsToFloat(r[s + j] << 16);
                }
            } else {
                for (int j = 0; j < d; j++) {
                    v[j] = Float.float16ToFloat(r[s + j]);
                }
            }
        }
    }

    /**
     * Scores of the {@code b} transposed keys in {@link #keysT} for every query head of the group,
     * into rows {@code [row, row+b)}: per head, {@code s[i] += q[j]·kᵀ[j][i]} for {@code j} in order,
     * the reference's summation order, then one multiplication by the scale. Both arrays of the
     * update are indexed by the same {@code i}, so C2 vectorises it without proving they differ.
     */
    private void score(float[] q, int q0, int row, int b) {
        float[][] t = keysT;
        for (int g = 0; g < group; g++) {
            float[] a = blockScores[g];
            Arrays.fill(a, 0, b, 0f);
            int qa = q0 + g * d;
            int j = 0;
            for (; j + 4 <= d; j += 4) { // four dimensions per pass: the same additions, in order
                float q0j = q[qa + j], q1j = q[qa + j + 1], q2j = q[qa + j + 2], q3j = q[qa + j + 3];
                float[] t0 = t[j], t1 = t[j + 1], t2 = t[j + 2], t3 = t[j + 3];
                for (int i = 0; i < b; i++) {
                    a[i] = a[i] + q0j * t0[i] + q1j * t1[i] + q2j * t2[i] + q3j * t3[i];
                }
            }
            for (; j < d; j++) {
                float qj = q[qa + j];
                float[] tj = t[j];
                for (int i = 0; i < b; i++) {
                    a[i] += qj * tj[i];
                }
            }
            int o = g * capacity + row;
            for (int i = 0; i < b; i++) {
                logits[o + i] = a[i] * scale;
            }
        }
    }

    /** Scores of one float row at {@code base} for every head of the group, into row {@code row}: the reference's loop. */
    private void scoreRow(float[] q, int q0, float[] k, int base, int row) {
        for (int g = 0; g < group; g++) {
            int qa = q0 + g * d;
            float s = 0;
            for (int j = 0; j < d; j++) {
                s += q[qa + j] * k[base + j];
            }
            logits[g * capacity + row] = s * scale;
        }
    }

    /** {@code headOut[g] += w[g][row] · v} for one float row at {@code base}. */
    private void accumulateRow(float[] v, int base, int row) {
        for (int g = 0; g < group; g++) {
            float w = logits[g * capacity + row];
            float[] o = headOut[g];
            for (int j = 0; j < d; j++) {
                o[j] += w * v[base + j];
            }
        }
    }

    /** Per head of the group, the scores of {@code total} rows become softmax weights (the reference's arithmetic). */
    private void softmax(int total) {
        float[] s = logits;
        for (int g = 0; g < group; g++) {
            int o = g * capacity;
            float norm = Softmax.exponentiate(s, o, total);
            for (int i = 0; i < total; i++) {
                s[o + i] *= norm;
            }
        }
    }

    /**
     * {@code headOut[g] += w[g][row+i] · valueRows[i]} for the {@code b} rows of the block, in row
     * order. Four rows per pass over a head's output: the same additions in the same order (row
     * {@code i} before row {@code i+1} for every element), with a quarter of the loads and stores
     * of the output and four times the work per vectorised loop.
     */
    private void accumulate(int row, int b) {
        float[] w = logits;
        float[][] vr = valueRows;
        for (int g = 0; g < group; g++) {
            float[] o = headOut[g];
            int wb = g * capacity + row;
            int i = 0;
            for (; i + 4 <= b; i += 4) {
                float w0 = w[wb + i], w1 = w[wb + i + 1], w2 = w[wb + i + 2], w3 = w[wb + i + 3];
                float[] v0 = vr[i], v1 = vr[i + 1], v2 = vr[i + 2], v3 = vr[i + 3];
                for (int j = 0; j < d; j++) {
                    o[j] = o[j] + w0 * v0[j] + w1 * v1[j] + w2 * v2[j] + w3 * v3[j];
                }
            }
            for (; i < b; i++) {
                float wi = w[wb + i];
                float[] v = vr[i];
                for (int j = 0; j < d; j++) {
                    o[j] += wi * v[j];
                }
            }
        }
    }
}
