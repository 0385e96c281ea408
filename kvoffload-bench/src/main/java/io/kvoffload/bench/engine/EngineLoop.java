package io.kvoffload.bench.engine;

import io.kvoffload.DType;
import io.kvoffload.DecodeOptions;
import io.kvoffload.DecodeStats;
import io.kvoffload.KvDecoder;
import io.kvoffload.KvSequence;
import io.kvoffload.KvShape;
import io.kvoffload.KvView;
import io.kvoffload.attention.DecodeAttention;
import io.kvoffload.attention.ExactAttention;
import io.kvoffload.attention.QualityMetrics;
import io.kvoffload.internal.util.ElementCodec;
import io.kvoffload.strategy.DenseLayerKv;
import io.kvoffload.strategy.swarm.ClusterOptions;
import io.kvoffload.strategy.swarm.Swarm;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * An inference engine's decode loop on kvoffload, and the same loop with the whole KV cache
 * resident in DRAM. Per layer {@code l} of a step:
 * <ol>
 *   <li>Q, K, V of the new token from layer {@code l}'s input;</li>
 *   <li>prefetch layer {@code l+1} with a query known now: predicted from layer {@code l}'s input
 *       ({@link Predict#INPUT}) or the previous step's query of layer {@code l+1}
 *       ({@link Predict#PREVIOUS}); layer 0 of the next step is prefetched at the last layer with
 *       this step's layer-0 query;</li>
 *   <li>await layer {@code l}'s view — the I/O wait left after the overlap;</li>
 *   <li>attention over the view plus the new token's K/V as an extra row
 *       ({@link DecodeAttention}), close the view, append the new K/V to layer {@code l} (allowed:
 *       only layer {@code l+1} has a fetch in flight);</li>
 *   <li>output projection and MLP — the compute the next layer's fetch hides behind.</li>
 * </ol>
 */
final class EngineLoop {
    /** Where layer {@code l+1}'s early query comes from. */
    enum Predict { INPUT, PREVIOUS }

    /** Where the time of the measured tokens went, in milliseconds per token. */
    record Breakdown(int tokens, double tokensPerSecond, double selectMs, double ioWaitMs, double attentionMs,
            double predictMs, double restMs, double serialFetchMs, long bytesPerToken, double predictorCosine,
            double previousCosine, double recallEarly, double recallActual) {
        double totalMs() {
            return 1000 / tokensPerSecond;
        }

        /** Share of the fetch time (measured unhidden in {@link #serialFetchMs}) that compute hid. */
        double hiddenShare() {
            return serialFetchMs <= 0 ? Double.NaN : Math.max(0, 1 - ioWaitMs / serialFetchMs);
        }
    }

    private final LlamaModel model;
    private final int[] prompt;
    private final int warmup;
    private final int tokens;
    /** Prefill K and V per layer as floats, {@code [token][kvHead][dim]}, with room for the generated tokens. */
    final float[][] keys;
    final float[][] values;

    EngineLoop(LlamaModel model, int context, int warmup, int tokens, long seed) {
        this.model = model;
        this.warmup = warmup;
        this.tokens = tokens;
        Random rnd = new Random(seed);
        prompt = new int[context];
        for (int i = 0; i < context; i++) {
            // Repeated phrases give the keys co-activation structure for Swarm to cluster.
            prompt[i] = i >= 64 && rnd.nextInt(4) == 0 ? prompt[i - 1 - rnd.nextInt(64)] : rnd.nextInt(model.vocab);
        }
        int row = model.kvHeads * model.headDim;
        int capacity = context + warmup + tokens + 1;
        keys = new float[model.layers][];
        values = new float[model.layers][];
        for (int l = 0; l < model.layers; l++) {
            keys[l] = new float[capacity * row];
            values[l] = new float[capacity * row];
            prefillLayer(l, keys[l], values[l]);
        }
    }

    int context() {
        return prompt.length;
    }

    /**
     * The prompt's K and V of layer {@code l}. Scalar Java cannot run a 16K-token prefill through
     * every layer in seconds, so each layer's input at a prompt token is taken to be the token's
     * embedding: K and V are computed once per vocabulary entry, then rotated to each position.
     * The decode steps run the full model.
     */
    private void prefillLayer(int l, float[] k, float[] v) {
        LlamaModel.Scratch s = model.scratch();
        int row = model.kvHeads * model.headDim;
        float[] tableK = new float[model.vocab * row];
        float[] tableV = new float[model.vocab * row];
        for (int t = 0; t < model.vocab; t++) {
            model.embed(t, s.x);
            LlamaModel.rmsNorm(s.x, model.attnNorm[l], s.norm);
            LlamaModel.matvec(s.norm, model.wk[l], model.hidden, row, tableK, t * row);
            LlamaModel.matvec(s.norm, model.wv[l], model.hidden, row, tableV, t * row);
        }
        for (int p = 0; p < prompt.length; p++) {
            System.arraycopy(tableK, prompt[p] * row, k, p * row, row);
            System.arraycopy(tableV, prompt[p] * row, v, p * row, row);
            model.rope(k, p * row, model.kvHeads, p);
        }
    }

    /** Appends the prompt's K/V to {@code seq} (BF16), clusters every layer (Swarm's offline phase) and commits. */
    void prefill(KvSequence seq, int profileQueries) {
        KvShape shape = seq.shape();
        int row = model.kvHeads * model.headDim;
        seq.appendTokens(prompt);
        try (Arena a = Arena.ofConfined()) {
            MemorySegment k = a.allocate((long) prompt.length * row * 2);
            MemorySegment v = a.allocate((long) prompt.length * row * 2);
            LlamaModel.Scratch s = model.scratch();
            for (int l = 0; l < shape.layers(); l++) {
                toBf16(keys[l], 0, prompt.length * row, k);
                toBf16(values[l], 0, prompt.length * row, v);
                seq.appendKv(l, k, v);
                // Queries of the prompt's last tokens, as a serving engine samples them during prefill.
                List<float[]> profile = new ArrayList<>();
                for (int i = 0; i < profileQueries; i++) {
                    int p = prompt.length - 1 - i * Math.max(1, prompt.length / (4 * profileQueries));
                    model.embed(prompt[p], s.x);
                    model.qkv(l, s, p);
                    profile.add(s.q.clone());
                }
                Swarm.clusterLayerFromQueries(seq, l, profile, ClusterOptions.defaults());
            }
        }
        seq.commit();
    }

    /** BF16 of {@code src[from..from+n)} into {@code dst}: the engine's conversion before {@code appendKv}. */
    static void toBf16(float[] src, int from, int n, MemorySegment dst) {
        ElementCodec.write(DType.BF16, dst, 0, src, from, n);
    }

    /** The decode loop over the offloaded cache. */
    Breakdown offload(KvSequence seq, DecodeOptions options, Predict predict) {
        KvShape shape = seq.shape();
        int layers = shape.layers();
        int qLen = model.queryHeads * model.headDim;
        int row = model.kvHeads * model.headDim;
        LlamaModel.Scratch s = model.scratch();
        DecodeAttention attention = new DecodeAttention(shape);
        float[][] predicted = new float[layers][qLen]; // layer l's query as predicted from layer l-1's input
        float[] predictNorm = new float[model.hidden];
        float[][] previous = new float[layers][qLen];
        float[][][] actual = new float[tokens][layers][];
        int[][][] earlyViews = new int[tokens][layers][]; // positions each view held
        KvView[] pending = new KvView[layers];
        int[] tokenId = new int[1];
        Timer timer = new Timer();
        double cosInput = 0;
        double cosPrevious = 0;
        int cosCount = 0;
        try (Arena a = Arena.ofConfined(); KvDecoder dec = seq.decoder(options)) {
            MemorySegment k1 = a.allocate(row * 2L);
            MemorySegment v1 = a.allocate(row * 2L);
            int token = prompt[prompt.length - 1];
            DecodeStats before = null;
            long start = 0;
            for (int step = 0; step < warmup + tokens; step++) {
                if (step == warmup) {
                    timer.reset();
                    before = dec.stats();
                    start = System.nanoTime();
                }
                int pos = prompt.length + step;
                tokenId[0] = token;
                seq.appendTokens(tokenId); // the id of the token whose K/V the layers append below
                model.embed(token, s.x);
                for (int l = 0; l < layers; l++) {
                    model.qkv(l, s, pos);
                    if (pending[l] == null) { // step 0, layer 0: nothing was prefetched before
                        long t0 = System.nanoTime();
                        pending[l] = dec.prefetch(l, s.q);
                        timer.select += System.nanoTime() - t0;
                    }
                    if (l + 1 < layers) {
                        long t0 = System.nanoTime();
                        float[] early;
                        if (predict == Predict.INPUT || step == 0) {
                            model.predictQuery(l + 1, s.x, pos, predictNorm, predicted[l + 1]);
                            early = predicted[l + 1];
                        } else {
                            early = previous[l + 1];
                        }
                        long t1 = System.nanoTime();
                        pending[l + 1] = dec.prefetch(l + 1, early);
                        long t2 = System.nanoTime();
                        timer.predict += t1 - t0;
                        timer.select += t2 - t1;
                    }
                    long t0 = System.nanoTime();
                    KvView view = pending[l].await();
                    long t1 = System.nanoTime();
                    attention.attend(view, s.q, s.k, s.v, 1, s.attn);
                    long t2 = System.nanoTime();
                    if (step >= warmup) {
                        earlyViews[step - warmup][l] = positions(view);
                    }
                    view.close();
                    pending[l] = null;
                    timer.ioWait += t1 - t0;
                    timer.attention += t2 - t1;
                    toBf16(s.k, 0, row, k1);
                    toBf16(s.v, 0, row, v1);
                    dec.appendKv(l, k1, v1); // layer l has no fetch in flight now; l+1 may
                    if (step >= 1 && l >= 1) {
                        if (predict == Predict.INPUT) {
                            cosInput += cosine(predicted[l], s.q);
                        }
                        cosPrevious += cosine(previous[l], s.q);
                        cosCount++;
                    }
                    if (step >= warmup) {
                        actual[step - warmup][l] = s.q.clone();
                    }
                    System.arraycopy(s.q, 0, previous[l], 0, qLen);
                    if (l == layers - 1) { // the next step's layer 0, from this step's layer-0 query
                        long t3 = System.nanoTime();
                        pending[0] = dec.prefetch(0, previous[0]);
                        timer.select += System.nanoTime() - t3;
                    }
                    model.finishLayer(l, s);
                }
                token = model.nextToken(s);
            }
            long wall = System.nanoTime() - start;
            pending[0].close(); // the next step's layer 0, not taken
            DecodeStats used = dec.stats().since(before);
            int[][][] actualViews = new int[tokens][layers][];
            double serial = serialFetchMs(dec, actual, actualViews);
            return timer.breakdown(tokens, wall, serial, used.bytesRead() / tokens,
                    predict == Predict.INPUT && cosCount > 0 ? cosInput / cosCount : Double.NaN,
                    cosCount > 0 ? cosPrevious / cosCount : Double.NaN,
                    massRecall(actual, earlyViews), massRecall(actual, actualViews));
        } // closing the decoder frees any view still pending after a failure
    }

    /**
     * Per token, the time the same fetches take when each is awaited at once (nothing to hide
     * behind): every layer fetched with the measured steps' actual queries, one after another.
     */
    private double serialFetchMs(KvDecoder dec, float[][][] actual, int[][][] views) {
        long waited = 0;
        for (int step = 0; step < actual.length; step++) {
            for (int l = 0; l < actual[step].length; l++) {
                long t0 = System.nanoTime();
                KvView v = dec.prefetch(l, actual[step][l]).await();
                waited += System.nanoTime() - t0;
                views[step][l] = positions(v);
                v.close();
            }
        }
        return waited / 1e6 / actual.length;
    }

    private static int[] positions(KvView v) {
        int[] p = new int[v.tokenCount()];
        for (int r = 0; r < p.length; r++) {
            p[r] = v.position(r);
        }
        return p;
    }

    /**
     * How much of each actual query's attention the views held: the mean over steps and layers of
     * the attention-mass recall over the prompt's tokens ({@link QualityMetrics#attentionMassRecall},
     * exact weights of the actual query; generated tokens, always in the window, left out).
     */
    private double massRecall(float[][][] actual, int[][][] views) {
        int d = model.headDim;
        int context = prompt.length;
        ExactAttention exact = new ExactAttention(model.queryHeads, model.kvHeads, d);
        double sum = 0;
        int count = 0;
        for (int l = 0; l < model.layers; l++) {
            float[][] k = new float[model.kvHeads][context * d];
            for (int t = 0; t < context; t++) {
                for (int h = 0; h < model.kvHeads; h++) {
                    System.arraycopy(keys[l], (t * model.kvHeads + h) * d, k[h], t * d, d);
                }
            }
            DenseLayerKv prefix = new DenseLayerKv(context, d, k, null);
            for (int step = 0; step < actual.length; step++) {
                int[] inPrompt = java.util.Arrays.stream(views[step][l]).filter(p -> p < context).toArray();
                sum += QualityMetrics.attentionMassRecall(exact.weights(prefix, actual[step][l]), inPrompt);
                count++;
            }
        }
        return sum / count;
    }

    /** The same loop with every layer's K/V resident in DRAM as floats and dense attention over all of it. */
    Breakdown dram() {
        int layers = model.layers;
        int row = model.kvHeads * model.headDim;
        LlamaModel.Scratch s = model.scratch();
        DecodeAttention attention = new DecodeAttention(model.shape, prompt.length + warmup + tokens + 1);
        Timer timer = new Timer();
        int token = prompt[prompt.length - 1];
        long start = 0;
        for (int step = 0; step < warmup + tokens; step++) {
            if (step == warmup) {
                timer.reset();
                start = System.nanoTime();
            }
            int pos = prompt.length + step;
            model.embed(token, s.x);
            for (int l = 0; l < layers; l++) {
                model.qkv(l, s, pos);
                System.arraycopy(s.k, 0, keys[l], pos * row, row);
                System.arraycopy(s.v, 0, values[l], pos * row, row);
                long t0 = System.nanoTime();
                attention.attend(keys[l], values[l], pos + 1, s.q, s.attn);
                timer.attention += System.nanoTime() - t0;
                model.finishLayer(l, s);
            }
            token = model.nextToken(s);
        }
        return timer.breakdown(tokens, System.nanoTime() - start, 0, 0, Double.NaN, Double.NaN, Double.NaN, Double.NaN);
    }

    static double cosine(float[] a, float[] b) {
        double dot = 0, na = 0, nb = 0;
        for (int i = 0; i < a.length; i++) {
            dot += a[i] * (double) b[i];
            na += a[i] * (double) a[i];
            nb += b[i] * (double) b[i];
        }
        return dot / Math.sqrt(na * nb);
    }

    /** Nanoseconds per part, summed over the measured tokens. */
    private static final class Timer {
        long select;
        long ioWait;
        long attention;
        long predict;

        void reset() {
            select = ioWait = attention = predict = 0;
        }

        Breakdown breakdown(int tokens, long wall, double serialFetchMs, long bytesPerToken, double cosInput,
                double cosPrevious, double recallEarly, double recallActual) {
            double per = 1e6 * tokens;
            double rest = (wall - select - ioWait - attention - predict) / per;
            return new Breakdown(tokens, tokens / (wall / 1e9), select / per, ioWait / per, attention / per,
                    predict / per, rest, serialFetchMs, bytesPerToken, cosInput, cosPrevious, recallEarly, recallActual);
        }
    }
}
