package io.kvoffload.workload;

import io.kvoffload.KvShape;
import io.kvoffload.strategy.LayerKv;
import io.kvoffload.testing.ReferenceSoftmax;

/** Exact softmax weights of one query head (the library's ExactAttention averages over heads). */
final class HeadSoftmax {
    private HeadSoftmax() {}

    static double[] weights(LayerKv kv, float[] query, int head, KvShape shape) {
        int d = shape.headDim();
        int kvHead = head / shape.groupSize();
        int n = kv.tokens();
        double[] logits = new double[n];
        float[] k = new float[d];
        double scale = 1 / Math.sqrt(d);
        for (int t = 0; t < n; t++) {
            kv.keys(kvHead, t, 1, k, 0);
            double dot = 0;
            for (int c = 0; c < d; c++) {
                dot += query[head * d + c] * k[c];
            }
            logits[t] = dot * scale;
        }
        return ReferenceSoftmax.inPlace(logits);
    }
}
