package io.kvoffload.bench.faults;

import io.kvoffload.DType;
import io.kvoffload.KvSequence;
import io.kvoffload.KvShape;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Deterministic KV for the fault campaign: every byte of a sequence follows from its seed, layer and
 * position, so what an engine returns can be checked bit for bit against what was acknowledged.
 */
final class CampaignData {
    /** Two layers, 4 query heads on 2 KV heads of 64, BF16: 512-byte entries, 8 KiB per 16-token block. */
    static final KvShape SHAPE = new KvShape(2, 4, 2, 64, DType.BF16);

    private CampaignData() {}

    static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }

    static int tokenId(long seed, int t) {
        return (int) (mix(seed * 31 + t) & 0x7fff);
    }

    static void fill(MemorySegment out, long seed, int layer, int from, int n, boolean value) {
        int half = SHAPE.halfEntryBytes();
        for (int i = 0; i < n; i++) {
            long base = mix(seed * 0x9E3779B97F4A7C15L + layer * 0x632BE59BD9B4E019L + (from + i) * 0x85157AF5L
                    + (value ? 1 : 0));
            for (int b = 0; b < half; b += 8) {
                out.set(ValueLayout.JAVA_LONG_UNALIGNED, (long) i * half + b, mix(base + b));
            }
        }
    }

    /**
     * Clusters of 8 consecutive tokens, plus clusters of 8 holding a second copy of every other
     * token: half the tokens are stored twice (on distinct devices), as Swarm's replicas are.
     */
    static int[][] clustersWithReplicas(int tokens) {
        java.util.List<int[]> out = new java.util.ArrayList<>();
        for (int t = 0; t < tokens; t += 8) {
            int n = Math.min(8, tokens - t);
            int[] c = new int[n];
            for (int i = 0; i < n; i++) {
                c[i] = t + i;
            }
            out.add(c);
        }
        java.util.List<Integer> second = new java.util.ArrayList<>();
        for (int t = 1; t < tokens; t += 2) {
            second.add(t);
        }
        for (int i = 0; i < second.size(); i += 8) {
            out.add(second.subList(i, Math.min(second.size(), i + 8)).stream().mapToInt(Integer::intValue).toArray());
        }
        return out.toArray(int[][]::new);
    }

    /** Appends tokens {@code [from, from + n)} of sequence {@code seed} to every layer. */
    static void append(KvSequence s, long seed, int n) {
        int from = s.tokenCount();
        int[] ids = new int[n];
        for (int i = 0; i < n; i++) {
            ids[i] = tokenId(seed, from + i);
        }
        s.appendTokens(ids);
        try (Arena arena = Arena.ofConfined()) {
            long bytes = (long) n * SHAPE.halfEntryBytes();
            MemorySegment k = arena.allocate(bytes, 8);
            MemorySegment v = arena.allocate(bytes, 8);
            for (int l = 0; l < SHAPE.layers(); l++) {
                fill(k, seed, l, from, n, false);
                fill(v, seed, l, from, n, true);
                s.appendKv(l, k, v);
            }
        }
    }

    /**
     * Reads every token of every layer and compares; returns null when all of it (token ids too) is
     * what sequence {@code seed} of {@code tokens} tokens holds, else what differs. Library failures
     * propagate.
     */
    static String verify(KvSequence s, long seed, int tokens) {
        if (s.tokenCount() != tokens) {
            return "has " + s.tokenCount() + " tokens, " + tokens + " were acknowledged";
        }
        int[] ids = s.tokenIds();
        for (int t = 0; t < tokens; t++) {
            if (ids[t] != tokenId(seed, t)) {
                return "token id at " + t + " differs";
            }
        }
        int[] pos = new int[tokens];
        for (int t = 0; t < tokens; t++) {
            pos[t] = t;
        }
        try (Arena arena = Arena.ofConfined()) {
            long bytes = (long) tokens * SHAPE.halfEntryBytes();
            MemorySegment k = arena.allocate(bytes, 8);
            MemorySegment v = arena.allocate(bytes, 8);
            MemorySegment ek = arena.allocate(bytes, 8);
            MemorySegment ev = arena.allocate(bytes, 8);
            for (int l = 0; l < SHAPE.layers(); l++) {
                s.read(l, pos, k, v);
                fill(ek, seed, l, 0, tokens, false);
                fill(ev, seed, l, 0, tokens, true);
                long mk = k.mismatch(ek);
                long mv = v.mismatch(ev);
                if (mk != -1 || mv != -1) {
                    long at = mk != -1 ? mk : mv;
                    return "layer " + l + " token " + at / SHAPE.halfEntryBytes() + (mk != -1 ? " K" : " V") + " differs";
                }
            }
        }
        return null;
    }
}
