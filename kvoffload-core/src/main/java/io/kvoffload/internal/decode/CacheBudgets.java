package io.kvoffload.internal.decode;

import java.util.Arrays;

/**
 * Moves a decoder's elastic cache budget between steps: every open layer gets the same share, the
 * layers giving units back go first (so those growing can take them), and a failure to grow puts
 * every layer already changed back to what it held, so the budget changes whole or not at all.
 */
public final class CacheBudgets {
    private CacheBudgets() {}

    /**
     * Resizes the open layers ({@code layers[l] != null}) to {@code perLayer} bytes each.
     *
     * @return bytes the layers hold afterwards
     * @throws io.kvoffload.KvDramExhaustedException when a layer cannot grow (every layer is back where it was)
     */
    public static long resize(LayerFetcher[] layers, long perLayer) {
        long[] before = new long[layers.length];
        int[] order = new int[layers.length];
        int n = 0;
        for (int l = 0; l < layers.length; l++) {
            before[l] = layers[l] == null ? 0 : layers[l].cacheHeldBytes();
        }
        for (int pass = 0; pass < 2; pass++) {
            for (int l = 0; l < layers.length; l++) {
                if (layers[l] != null && (before[l] > perLayer) == (pass == 0)) {
                    order[n++] = l;
                }
            }
        }
        order = Arrays.copyOf(order, n);
        long held = 0;
        int done = 0;
        try {
            for (; done < n; done++) {
                held += layers[order[done]].resizeCache(perLayer);
            }
        } catch (RuntimeException e) {
            for (int i = 0; i < done; i++) {
                try {
                    layers[order[i]].resizeCache(before[order[i]]);
                } catch (RuntimeException again) {
                    e.addSuppressed(again);
                }
            }
            throw e;
        }
        return held;
    }

    /** Bytes the open layers' elastic caches hold now. */
    public static long held(LayerFetcher[] layers) {
        long held = 0;
        for (LayerFetcher f : layers) {
            if (f != null) {
                held += f.cacheHeldBytes();
            }
        }
        return held;
    }
}
