package io.kvoffload.workload;

import io.kvoffload.KvShape;
import io.kvoffload.internal.util.Checks;
import java.util.SplittableRandom;

/**
 * Passkey retrieval on a layer of Gaussian keys: per KV head a needle, a token whose key is set along a
 * random direction that one query head of the KV head (or every one) looks along, so that the needle
 * draws a chosen share of that query head's attention; the other query heads look in random directions.
 * The needle is each KV head's own token, or one token for all. The query makes the other tokens'
 * logits ({@code q·k/√headDim}) standard normal where the keys are Gaussian with standard deviation
 * {@code keyScale}, and the needle's logit lies exactly {@link #margin} above their mean, so its share
 * holds up to the spread of the others' sum. What {@code kvo needle} measures and {@code
 * NeedleRetrievalTest} checks through the decoder.
 */
public final class Needles {
    private final KvShape shape;
    private final float keyScale;
    private final double margin;
    private final int[] positions;
    private final float[][] directions;
    private final float[] query;

    private Needles(KvShape shape, float keyScale, double margin, int[] positions, float[][] directions, float[] query) {
        this.shape = shape;
        this.keyScale = keyScale;
        this.margin = margin;
        this.positions = positions;
        this.directions = directions;
        this.query = query;
    }

    /**
     * Draws the needles of one layer of {@code tokens} tokens: their positions in {@code [from, to)},
     * their directions and the query.
     *
     * @param share the needle's share of its looking query head's attention, in (0, 1)
     * @param keyScale the standard deviation of the layer's other key elements, positive
     * @param everyHeadLooks every query head of a KV head looks for its needle, not only the first
     * @param oneToken one needle token for every KV head, not one each
     * @throws IllegalArgumentException naming a bad argument
     */
    public static Needles draw(KvShape shape, int tokens, int from, int to, double share, float keyScale,
            boolean everyHeadLooks, boolean oneToken, long seed) {
        Checks.notNull("shape", shape);
        Checks.positive("tokens", tokens);
        if (from < 0 || to > tokens || from >= to) {
            throw new IllegalArgumentException("needle range [" + from + ", " + to + ") is out of range; allowed: a non-empty"
                    + " range within [0, " + tokens + ")");
        }
        if (!(share > 0 && share < 1)) {
            throw new IllegalArgumentException("share = " + share + "; allowed: (0, 1)");
        }
        if (!(keyScale > 0) || Float.isInfinite(keyScale)) {
            throw new IllegalArgumentException("keyScale = " + keyScale + "; allowed: a finite value > 0");
        }
        SplittableRandom rnd = new SplittableRandom(seed);
        int kv = shape.kvHeads(), d = shape.headDim(), group = shape.groupSize();
        int shared = from + rnd.nextInt(to - from);
        int[] positions = new int[kv];
        float[][] directions = new float[kv][];
        for (int h = 0; h < kv; h++) {
            positions[h] = oneToken ? shared : from + rnd.nextInt(to - from);
            directions[h] = unit(rnd, d);
        }
        float norm = (float) Math.sqrt(d) / keyScale;
        float[] query = new float[shape.queryHeads() * d];
        for (int q = 0; q < shape.queryHeads(); q++) {
            float[] dir = everyHeadLooks || q % group == 0 ? directions[q / group] : unit(rnd, d);
            for (int j = 0; j < d; j++) {
                query[q * d + j] = dir[j] * norm;
            }
        }
        return new Needles(shape, keyScale, margin(tokens, share), positions, directions, query);
    }

    /**
     * How far above the mean of {@code tokens − 1} standard normal logits a token must lie to draw
     * {@code share} of a softmax over them and itself: {@code ln(share / (1 − share)) + ln(tokens − 1) + ½}
     * (the others' exponentials average {@code e^½}).
     */
    public static double margin(int tokens, double share) {
        return Math.log(share / (1 - share)) + Math.log(Math.max(1, tokens - 1)) + 0.5;
    }

    /** The needle's logit above the mean of the others' ({@link #margin}). */
    public double margin() {
        return margin;
    }

    /** KV head {@code kvHead}'s needle. */
    public int position(int kvHead) {
        return positions[Checks.inRange("kvHead", kvHead, 0, positions.length - 1)];
    }

    /** The query, {@code queryHeads × headDim} floats (a copy). */
    public float[] query() {
        return query.clone();
    }

    /** Plants the needles in {@code keys}, one array per KV head of {@code tokens × headDim} floats. */
    public void plantHeadMajor(float[][] keys) {
        Checks.notNull("keys", keys);
        Checks.capacity("keys.length", keys.length, shape.kvHeads());
        for (int h = 0; h < positions.length; h++) {
            plant(keys[h], positions[h] * shape.headDim(), h);
        }
    }

    /** Plants the needles in {@code keys}, token-major: {@code [token][kvHead][headDim]}. */
    public void plantTokenMajor(float[] keys) {
        Checks.notNull("keys", keys);
        for (int h = 0; h < positions.length; h++) {
            plant(keys, (positions[h] * shape.kvHeads() + h) * shape.headDim(), h);
        }
    }

    /** Sets the key's component along its head's direction to {@code keyScale × margin}: its logit is the margin. */
    private void plant(float[] keys, int at, int h) {
        int d = shape.headDim();
        Checks.slice("keys", at, d, keys.length);
        float[] u = directions[h];
        double along = 0;
        for (int j = 0; j < d; j++) {
            along += keys[at + j] * u[j];
        }
        float move = (float) (keyScale * margin - along);
        for (int j = 0; j < d; j++) {
            keys[at + j] += move * u[j];
        }
    }

    private static float[] unit(SplittableRandom rnd, int d) {
        float[] u = new float[d];
        double n = 0;
        for (int j = 0; j < d; j++) {
            u[j] = (float) rnd.nextGaussian();
            n += u[j] * u[j];
        }
        for (int j = 0; j < d; j++) {
            u[j] /= (float) Math.sqrt(n);
        }
        return u;
    }
}
