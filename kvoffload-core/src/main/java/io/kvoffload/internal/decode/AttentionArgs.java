package io.kvoffload.internal.decode;

import io.kvoffload.KvShape;
import io.kvoffload.KvView;
import io.kvoffload.internal.util.Checks;

/** The argument checks {@link io.kvoffload.SparseAttention} and the attention package's kernels share. */
public final class AttentionArgs {
    private AttentionArgs() {}

    /**
     * Checks one attention call and returns the view's rows (0 without a view).
     *
     * @param view may be null (rows from arrays only)
     * @param extraKeys {@code extraRows × kvHeads × headDim} floats, row after row (null when {@code extraRows} is 0)
     */
    public static int check(KvShape shape, KvView view, float[] query, float[] extraKeys, float[] extraValues,
            int extraRows, float[] out) {
        Checks.notNull("query", query);
        Checks.notNull("out", out);
        int d = shape.headDim();
        int qh = shape.queryHeads();
        if (query.length != qh * d || out.length != qh * d) {
            throw new IllegalArgumentException("query.length = " + query.length + " and out.length = " + out.length
                    + " must both be queryHeads × headDim = " + qh * d);
        }
        if (extraRows < 0) {
            throw new IllegalArgumentException("extraRows = " + extraRows + "; allowed: ≥ 0");
        }
        if (extraRows > 0) {
            long need = (long) extraRows * shape.kvHeads() * d;
            Checks.notNull("extraKeys", extraKeys);
            Checks.notNull("extraValues", extraValues);
            if (extraKeys.length < need || extraValues.length < need) {
                throw new IllegalArgumentException("extraKeys.length = " + extraKeys.length + " and extraValues.length = "
                        + extraValues.length + " must both be at least extraRows × kvHeads × headDim = " + extraRows
                        + " × " + shape.kvHeads() + " × " + d + " = " + need);
            }
        }
        int n = 0;
        if (view != null) {
            if (!view.shape().equals(shape)) {
                throw new IllegalArgumentException("view has shape " + view.shape() + " but this kernel was made for " + shape);
            }
            n = view.tokenCount(); // throws IllegalStateException for a view not awaited or closed
        }
        if (n + (long) extraRows == 0) {
            throw new IllegalArgumentException("the view and the extra rows hold no tokens; allowed: at least one");
        }
        if (n + (long) extraRows > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("view rows " + n + " + extraRows " + extraRows + " exceed an int array");
        }
        return n;
    }
}
