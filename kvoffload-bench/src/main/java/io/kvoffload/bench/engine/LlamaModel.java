package io.kvoffload.bench.engine;

import io.kvoffload.DType;
import io.kvoffload.KvShape;
import java.util.Random;

/**
 * A Llama-architecture decoder with random weights, one token at a time: embedding, per layer
 * RMSNorm → Q/K/V projections → RoPE → grouped-query attention (done by the caller, over whatever
 * holds its KV) → output projection and residual → RMSNorm → SwiGLU MLP and residual, then a final
 * RMSNorm and the LM head. Plain loops on {@code float[]}: weights are stored input-major so each
 * matrix-vector product is a series of {@code y += x[i]·W[i][:]} updates, which C2 vectorises.
 *
 * <p>Weights follow GPT-2's initialisation (normal, σ = 0.02, output projections scaled by
 * {@code 1/√(2·layers)}), so each layer changes the residual stream a little, as in a trained
 * model — which is what lets layer {@code l}'s input predict layer {@code l+1}'s query
 * ({@link #predictQuery}).
 */
final class LlamaModel {
    static final float RMS_EPS = 1e-5f;
    static final double ROPE_THETA = 500_000;

    final int layers;
    final int hidden;
    final int ffn;
    final int vocab;
    final int queryHeads;
    final int kvHeads;
    final int headDim;
    final KvShape shape;

    final float[] embedding; // [vocab][hidden]
    final float[][] attnNorm;
    final float[][] mlpNorm;
    final float[][] wq; // [hidden][queryHeads·headDim]
    final float[][] wk; // [hidden][kvHeads·headDim]
    final float[][] wv;
    final float[][] wo; // [queryHeads·headDim][hidden]
    final float[][] wGate; // [hidden][ffn]
    final float[][] wUp;
    final float[][] wDown; // [ffn][hidden]
    final float[] finalNorm;
    final float[] lmHead; // [hidden][vocab]
    /** RoPE's inverse frequencies, one per pair of dimensions. */
    private final double[] invFreq;

    LlamaModel(int layers, int hidden, int ffn, int vocab, int queryHeads, int kvHeads, int headDim, long seed) {
        this.layers = layers;
        this.hidden = hidden;
        this.ffn = ffn;
        this.vocab = vocab;
        this.queryHeads = queryHeads;
        this.kvHeads = kvHeads;
        this.headDim = headDim;
        if (headDim % 2 != 0) {
            throw new IllegalArgumentException("headDim = " + headDim + "; allowed: even (RoPE rotates pairs)");
        }
        this.shape = new KvShape(layers, queryHeads, kvHeads, headDim, DType.BF16);
        Random rnd = new Random(seed);
        float out = (float) (0.02 / Math.sqrt(2.0 * layers));
        embedding = normal(rnd, vocab * hidden, 1f);
        attnNorm = new float[layers][];
        mlpNorm = new float[layers][];
        wq = new float[layers][];
        wk = new float[layers][];
        wv = new float[layers][];
        wo = new float[layers][];
        wGate = new float[layers][];
        wUp = new float[layers][];
        wDown = new float[layers][];
        int q = queryHeads * headDim;
        int kv = kvHeads * headDim;
        for (int l = 0; l < layers; l++) {
            attnNorm[l] = ones(hidden);
            mlpNorm[l] = ones(hidden);
            // Q/K at σ = 1/√hidden so scores have a spread like a trained model's, not a flat softmax.
            wq[l] = normal(rnd, hidden * q, (float) (2 / Math.sqrt(hidden)));
            wk[l] = normal(rnd, hidden * kv, (float) (2 / Math.sqrt(hidden)));
            wv[l] = normal(rnd, hidden * kv, 0.02f);
            wo[l] = normal(rnd, q * hidden, out);
            wGate[l] = normal(rnd, hidden * ffn, 0.02f);
            wUp[l] = normal(rnd, hidden * ffn, 0.02f);
            wDown[l] = normal(rnd, ffn * hidden, out);
        }
        finalNorm = ones(hidden);
        lmHead = normal(rnd, hidden * vocab, 0.02f);
        invFreq = new double[headDim / 2];
        for (int i = 0; i < headDim / 2; i++) {
            invFreq[i] = 1 / Math.pow(ROPE_THETA, 2.0 * i / headDim);
        }
    }

    private static float[] normal(Random rnd, int n, float sigma) {
        float[] f = new float[n];
        for (int i = 0; i < n; i++) {
            f[i] = (float) rnd.nextGaussian() * sigma;
        }
        return f;
    }

    private static float[] ones(int n) {
        float[] f = new float[n];
        java.util.Arrays.fill(f, 1f);
        return f;
    }

    /** {@code out = x / rms(x) · gain}. */
    static void rmsNorm(float[] x, float[] gain, float[] out) {
        double ss = 0;
        for (float v : x) {
            ss += v * v;
        }
        float inv = (float) (1 / Math.sqrt(ss / x.length + RMS_EPS));
        for (int i = 0; i < x.length; i++) {
            out[i] = x[i] * inv * gain[i];
        }
    }

    /** {@code y = xᵀ·W} for W stored {@code [in][out]}, at {@code y[yOff..yOff+out)}. */
    static void matvec(float[] x, float[] w, int in, int out, float[] y, int yOff) {
        java.util.Arrays.fill(y, yOff, yOff + out, 0f);
        for (int i = 0; i < in; i++) {
            float xi = x[i];
            int row = i * out;
            for (int j = 0; j < out; j++) {
                y[yOff + j] += xi * w[row + j];
            }
        }
    }

    /** Rotary position encoding of {@code heads} heads of {@code v} at {@code pos}, in place (pairs (2i, 2i+1)). */
    void rope(float[] v, int off, int heads, int pos) {
        for (int h = 0; h < heads; h++) {
            int b = off + h * headDim;
            for (int i = 0; i < headDim / 2; i++) {
                double a = pos * invFreq[i];
                float c = (float) Math.cos(a);
                float s = (float) Math.sin(a);
                float x0 = v[b + 2 * i];
                float x1 = v[b + 2 * i + 1];
                v[b + 2 * i] = x0 * c - x1 * s;
                v[b + 2 * i + 1] = x0 * s + x1 * c;
            }
        }
    }

    /** Scratch of one decoding thread. */
    final class Scratch {
        final float[] x = new float[hidden];
        final float[] norm = new float[hidden];
        final float[] q = new float[queryHeads * headDim];
        final float[] k = new float[kvHeads * headDim];
        final float[] v = new float[kvHeads * headDim];
        final float[] attn = new float[queryHeads * headDim];
        final float[] proj = new float[hidden];
        final float[] gate = new float[ffn];
        final float[] up = new float[ffn];
        final float[] logits = new float[vocab];
    }

    Scratch scratch() {
        return new Scratch();
    }

    void embed(int token, float[] x) {
        System.arraycopy(embedding, token * hidden, x, 0, hidden);
    }

    /** Layer {@code l}'s query, key and value of the token whose residual stream is {@code s.x}, at {@code pos}. */
    void qkv(int l, Scratch s, int pos) {
        rmsNorm(s.x, attnNorm[l], s.norm);
        matvec(s.norm, wq[l], hidden, queryHeads * headDim, s.q, 0);
        matvec(s.norm, wk[l], hidden, kvHeads * headDim, s.k, 0);
        matvec(s.norm, wv[l], hidden, kvHeads * headDim, s.v, 0);
        rope(s.q, 0, queryHeads, pos);
        rope(s.k, 0, kvHeads, pos);
    }

    /**
     * Layer {@code l}'s query predicted from another layer's input {@code x} (InfiniGen's and
     * KVSwap's observation: adjacent layers' inputs are similar, so {@code W_q^{l}} applied to layer
     * {@code l−1}'s input approximates layer {@code l}'s query before layer {@code l−1} has run).
     */
    void predictQuery(int l, float[] x, int pos, float[] norm, float[] q) {
        rmsNorm(x, attnNorm[l], norm);
        matvec(norm, wq[l], hidden, queryHeads * headDim, q, 0);
        rope(q, 0, queryHeads, pos);
    }

    /** After attention: output projection, residual, SwiGLU MLP, residual. */
    void finishLayer(int l, Scratch s) {
        int q = queryHeads * headDim;
        matvec(s.attn, wo[l], q, hidden, s.proj, 0);
        for (int i = 0; i < hidden; i++) {
            s.x[i] += s.proj[i];
        }
        rmsNorm(s.x, mlpNorm[l], s.norm);
        matvec(s.norm, wGate[l], hidden, ffn, s.gate, 0);
        matvec(s.norm, wUp[l], hidden, ffn, s.up, 0);
        for (int i = 0; i < ffn; i++) {
            float g = s.gate[i];
            s.gate[i] = g / (1 + (float) Math.exp(-g)) * s.up[i]; // SiLU(gate) · up
        }
        matvec(s.gate, wDown[l], ffn, hidden, s.proj, 0);
        for (int i = 0; i < hidden; i++) {
            s.x[i] += s.proj[i];
        }
    }

    /** Final norm, LM head, greedy choice. */
    int nextToken(Scratch s) {
        rmsNorm(s.x, finalNorm, s.norm);
        matvec(s.norm, lmHead, hidden, vocab, s.logits, 0);
        int best = 0;
        for (int i = 1; i < vocab; i++) {
            if (s.logits[i] > s.logits[best]) {
                best = i;
            }
        }
        return best;
    }
}
