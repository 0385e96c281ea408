package io.kvoffload.workload;

import static io.kvoffload.workload.SyntheticWorkloadTest.assertMessage;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.kvoffload.attention.QualityMetrics;
import org.junit.jupiter.api.Test;

class QualityMetricsTest {
    private static final float[] W = {0.1f, 0.4f, 0.2f, 0.3f};

    @Test
    void attentionMassRecallSumsTheSelectedWeightsOnce() {
        assertEquals(1.0, QualityMetrics.attentionMassRecall(W, new int[] {0, 1, 2, 3}), 1e-7);
        assertEquals(0.7, QualityMetrics.attentionMassRecall(W, new int[] {1, 3, 3, 1}), 1e-7);
        assertEquals(0.0, QualityMetrics.attentionMassRecall(W, new int[0]));
        // Weights need not be normalised.
        assertEquals(0.5, QualityMetrics.attentionMassRecall(new float[] {2f, 2f}, new int[] {0}), 1e-7);
    }

    @Test
    void topKRecallCountsTheMostAttendedTokensSelected() {
        assertEquals(1.0, QualityMetrics.topKRecall(W, new int[] {1, 3}, 2)); // top-2 = {1, 3}
        assertEquals(0.5, QualityMetrics.topKRecall(W, new int[] {1, 2}, 2));
        assertEquals(0.0, QualityMetrics.topKRecall(W, new int[] {0}, 1));
        assertEquals(0.25, QualityMetrics.topKRecall(W, new int[] {0}, 4));
        // Ties go to the lower index: top-1 of {1, 1} is token 0.
        assertEquals(1.0, QualityMetrics.topKRecall(new float[] {1f, 1f}, new int[] {0}, 1));
    }

    @Test
    void relativeErrorIsTheNormOfTheDifferenceOverTheNormOfTheExactOutput() {
        assertEquals(0.0, QualityMetrics.relativeError(new float[] {3, 4}, new float[] {3, 4}));
        assertEquals(0.2, QualityMetrics.relativeError(new float[] {3, 4}, new float[] {3, 5}), 1e-12); // 1 / 5
        assertEquals(1.0, QualityMetrics.relativeError(new float[] {3, 4}, new float[] {0, 0}), 1e-12);
        assertEquals(0.0, QualityMetrics.relativeError(new float[] {0, 0}, new float[] {0, 0}));
        assertEquals(Double.POSITIVE_INFINITY, QualityMetrics.relativeError(new float[] {0}, new float[] {1}));
    }

    @Test
    void rejectsBadInput() {
        assertMessage(() -> QualityMetrics.attentionMassRecall(W, new int[] {4}), "selected token = 4", "0..3");
        assertMessage(() -> QualityMetrics.attentionMassRecall(new float[] {-1f, 2f}, new int[] {0}), "-1.0", "≥ 0");
        assertMessage(() -> QualityMetrics.attentionMassRecall(new float[] {0f}, new int[] {0}), "sum to 0");
        assertMessage(() -> QualityMetrics.topKRecall(W, new int[] {0}, 5), "k = 5", "1..4");
        assertMessage(() -> QualityMetrics.topKRecall(W, new int[] {0}, 0), "k = 0", "1..4");
        assertMessage(() -> QualityMetrics.relativeError(new float[2], new float[3]), "approx.length = 3", "exact.length = 2");
    }
}
