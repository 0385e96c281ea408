package io.kvoffload;

import io.kvoffload.testing.Layouts;
import io.kvoffload.strategy.swarm.Swarm;
import io.kvoffload.strategy.kvswap.GroupOptions;
import io.kvoffload.strategy.kvswap.KvSwap;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.internal.kvswap.CompressedKCache;
import io.kvoffload.internal.kvswap.GroupPredictor;
import io.kvoffload.internal.storage.GroupLayout;
import io.kvoffload.testing.TestEngines;
import io.kvoffload.internal.util.ElementCodec;
import io.kvoffload.workload.SyntheticWorkload;
import io.kvoffload.workload.WorkloadSpec;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.BitSet;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * KVSwap's rolling buffer flush [KVSwap §3.4.1]: tokens decoded after {@code groupLayer} leave
 * DRAM in whole groups, written group-major to the SSDs, and are then predicted and fetched like the
 * prefill's groups; the grown layout survives commit and restart, and a close without commit frees
 * exactly what the session allocated.
 */
class KvSwapRollingBufferTest {
    static final KvShape SHAPE = KvDecoderTest.SHAPE;
    static final int PREFILL = 1024;
    static final int DECODED = 600;
    static final int TOTAL = PREFILL + DECODED;
    static final int G = 4;
    static final int WINDOW = 64;
    static final int SINKS = 4;
    static final int BUDGET = 96;
    static final int BLOCK = 16;

    @TempDir
    Path root;
    SyntheticWorkload w;
    byte[][][] expected; // [layer][K|V][bytes], all TOTAL tokens

    @BeforeEach
    void workload() {
        w = new SyntheticWorkload(WorkloadSpec.builder(SHAPE, TOTAL).seed(5).build());
        expected = new byte[SHAPE.layers()][][];
        for (int l = 0; l < SHAPE.layers(); l++) {
            expected[l] = TestEngines.kvBytes(w, l, TOTAL);
        }
    }

    KvConfig config() {
        return TestEngines.config(TestEngines.deviceDirs(root, 3), "portable").blockTokens(BLOCK).build();
    }

    static DecodeOptions options() {
        return DecodeOptions.builder().strategy(Swarm.defaults()).strategy(KvSwap.defaults().withReuseSlots(0)).budgetTokens(BUDGET)
                .sinkTokens(SINKS).localWindow(WINDOW).build();
    }

    /** The prefill, grouped and committed. */
    void storeGrouped(KvEngine e) {
        try (KvSequence s = e.createSequence("s", SHAPE); Arena a = Arena.ofConfined()) {
            int[] ids = new int[PREFILL];
            s.appendTokens(ids);
            for (int l = 0; l < SHAPE.layers(); l++) {
                s.appendKv(l, slice(a, l, 0, PREFILL, 0), slice(a, l, 0, PREFILL, 1));
                KvSwap.groupLayer(s, l, GroupOptions.defaults().withGroupSize(G));
            }
            s.commit();
        }
    }

    /** Tokens {@code [from, from + n)} of the source K (part 0) or V (part 1) of {@code layer}. */
    MemorySegment slice(Arena a, int layer, int from, int n, int part) {
        int half = SHAPE.halfEntryBytes();
        MemorySegment m = a.allocate((long) n * half);
        MemorySegment.copy(MemorySegment.ofArray(expected[layer][part]), (long) from * half, m, 0, (long) n * half);
        return m;
    }

    /** The decoder opens a layer (its window, compressed K cache) at its first step. */
    void openLayers(KvDecoder d) {
        for (int l = 0; l < SHAPE.layers(); l++) {
            d.prefetch(l, w.query(l, 0)).await().close();
        }
    }

    /** Appends decoded tokens {@code [from, to)} to every layer through the decoder. */
    void decode(KvSequence s, KvDecoder d, int from, int to) {
        try (Arena a = Arena.ofConfined()) {
            for (int t = from; t < to; t++) {
                s.appendTokens(1);
                for (int l = 0; l < SHAPE.layers(); l++) {
                    d.appendKv(l, slice(a, l, t, 1, 0), slice(a, l, t, 1, 1));
                }
            }
        }
    }

    /** Rows are distinct positions holding exactly the source K and V; returns the positions. */
    BitSet assertBitExact(KvView v) {
        int half = SHAPE.halfEntryBytes();
        int row = SHAPE.headDim() * SHAPE.dtype().bytes();
        BitSet seen = new BitSet();
        byte[][] exp = expected[v.layer()];
        for (int r = 0; r < v.tokenCount(); r++) {
            int p = v.position(r);
            assertTrue(!seen.get(p), "position " + p + " appears twice");
            seen.set(p);
            for (int h = 0; h < SHAPE.kvHeads(); h++) {
                MemorySegment ek = MemorySegment.ofArray(exp[0]).asSlice((long) p * half + (long) h * row, row);
                MemorySegment ev = MemorySegment.ofArray(exp[1]).asSlice((long) p * half + (long) h * row, row);
                assertEquals(-1, v.keys(h).asSlice((long) r * row, row).mismatch(ek), "K of " + p + " head " + h);
                assertEquals(-1, v.values(h).asSlice((long) r * row, row).mismatch(ev), "V of " + p + " head " + h);
            }
        }
        return seen;
    }

    /**
     * What a step must attend: sinks, the DRAM window from {@code windowStart} (the rolling buffer)
     * and every token of the top M groups, predicted independently from the source keys of all full
     * groups.
     */
    BitSet expectedView(KvSequence s, int layer, float[] q, int windowStart, int end) {
        GroupLayout gl = Layouts.groupLayout(s, layer);
        int full = end / G * G;
        int el = SHAPE.elementsPerToken();
        float[] keys = new float[full * el];
        ElementCodec.read(SHAPE.dtype(), MemorySegment.ofArray(expected[layer][0]), 0, keys, 0, full * el);
        CompressedKCache c = new CompressedKCache((io.kvoffload.internal.kvswap.LowRankAdapter) gl.state(), DType.F16, full);
        c.append(keys, 0, full);
        GroupPredictor p = new GroupPredictor(c, SHAPE.queryHeads(), G);
        int[] groups = new int[p.groupCount()];
        // Groups between the sinks and the window, until their tokens there fill the budget.
        int m = p.selectGroupsBetween(q, BUDGET, SINKS, windowStart, groups);
        BitSet want = new BitSet();
        want.set(0, SINKS);
        want.set(windowStart, end);
        for (int i = 0; i < m; i++) {
            want.set(groups[i] * G, groups[i] * G + G);
        }
        return want;
    }

    static long freeBytes(KvEngine e) {
        return e.stats().devices().stream().mapToLong(KvStats.Device::freeBytes).sum();
    }

    @Test
    void decodedGroupsLeaveDramAreFetchedBitExactAndSurviveRestart() throws Exception {
        int[] groupedAfter = new int[SHAPE.layers()];
        try (KvEngine e = KvEngine.open(config())) {
            storeGrouped(e);
            try (KvSequence s = e.openSequenceForAppend("s"); KvDecoder d = s.decoder(options())) {
                openLayers(d); // window [PREFILL - WINDOW, PREFILL)
                int end = PREFILL;
                for (int round = 1; end < TOTAL; round++) {
                    int next = Math.min(TOTAL, end + 50);
                    decode(s, d, end, next);
                    end = next;
                    for (int l = 0; l < SHAPE.layers(); l++) {
                        int grouped = Layouts.groupLayout(s, l).groupedTokens();
                        // The rolling buffer: the local window, at most a batch of flushable groups and a partial group.
                        assertTrue(grouped >= end - WINDOW - BLOCK - G, "layer " + l + " at " + end + ": only " + grouped
                                + " tokens grouped");
                        assertEquals(0, grouped % G);
                        int windowStart = grouped > PREFILL ? grouped : PREFILL - WINDOW;
                        float[] q = w.query(l, round);
                        try (KvView v = d.prefetch(l, q).await()) {
                            assertEquals(expectedView(s, l, q, windowStart, end), assertBitExact(v),
                                    "layer " + l + " at " + end + " tokens");
                        }
                    }
                    // Sinks and a ring of at most 256 tokens (the window, a flush batch, a partial group).
                    assertTrue(d.stats().windowBytes() <= 2L * SHAPE.layers() * (SINKS + 256) * SHAPE.halfEntryBytes(),
                            "the DRAM window stays bounded: " + d.stats().windowBytes() + " bytes");
                }
                assertTrue(d.stats().bytesRead() > 0);
                for (int l = 0; l < SHAPE.layers(); l++) {
                    GroupLayout gl = Layouts.groupLayout(s, l);
                    int layer = l;
                    for (int g = 0; g < gl.groupCount(); g++) {
                        assertEquals(g % 3, gl.groupDevice(g), "the round-robin continues: group " + g);
                    }
                    String m = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                            () -> io.kvoffload.internal.storage.GroupLayoutWriter.append(Layouts.store(s), s.id(),
                                    Layouts.entryChecksum(s), layer, SHAPE, gl, gl.groupedTokens() + G + 1, (p, k, v) -> { }))
                            .getMessage();
                    assertEquals("groupedTokens = " + (gl.groupedTokens() + G + 1) + " is out of range; allowed: a"
                            + " multiple of groupSize = " + G + " greater than the layout's " + gl.groupedTokens(), m);
                    groupedAfter[l] = Layouts.groupLayout(s, l).groupedTokens();
                    assertTrue(groupedAfter[l] > PREFILL + DECODED / 2, "grouped " + groupedAfter[l]);
                }
                s.commit();
            }
        }
        try (KvEngine e = KvEngine.open(config()); KvSequence s = e.openSequence("s"); Arena a = Arena.ofConfined()) {
            assertEquals(TOTAL, s.tokenCount());
            MemorySegment k = a.allocate((long) TOTAL * SHAPE.halfEntryBytes());
            MemorySegment v = a.allocate((long) TOTAL * SHAPE.halfEntryBytes());
            for (int l = 0; l < SHAPE.layers(); l++) {
                assertEquals(groupedAfter[l], Layouts.groupLayout(s, l).groupedTokens(), "the grown layout was persisted");
                assertEquals(groupedAfter[l] / G, KvSwap.groupCount(s, l));
                s.read(l, 0, TOTAL, k, v); // grouped tokens come from the groups, CRC-checked
                assertEquals(-1, k.mismatch(MemorySegment.ofArray(expected[l][0])), "K of layer " + l);
                assertEquals(-1, v.mismatch(MemorySegment.ofArray(expected[l][1])), "V of layer " + l);
            }
            try (KvDecoder d = s.decoder(options())) {
                for (int l = 0; l < SHAPE.layers(); l++) {
                    float[] q = w.query(l, 99);
                    int windowStart = Math.max(SINKS, Math.min(groupedAfter[l], TOTAL - WINDOW));
                    try (KvView view = d.prefetch(l, q).await()) {
                        assertEquals(expectedView(s, l, q, windowStart, TOTAL), assertBitExact(view), "layer " + l);
                    }
                }
            }
        }
    }

    @Test
    void closeWithoutCommitFreesOnlyTheSessionsExtents() throws Exception {
        try (KvEngine e = KvEngine.open(config())) {
            storeGrouped(e);
            long committed = freeBytes(e);
            // A session that flushes groups and commits: its layout extends the one the prefill committed.
            int mid = PREFILL + DECODED / 2;
            try (KvSequence s = e.openSequenceForAppend("s"); KvDecoder d = s.decoder(options())) {
                openLayers(d);
                decode(s, d, PREFILL, mid);
                assertTrue(Layouts.groupLayout(s, 0).groupedTokens() > PREFILL);
                s.commit();
            }
            long afterCommit = freeBytes(e);
            assertTrue(afterCommit < committed, "the commit keeps the new groups");
            // A session that flushes more groups and is closed without commit leaves exactly the commit's extents.
            try (KvSequence s = e.openSequenceForAppend("s"); KvDecoder d = s.decoder(options())) {
                openLayers(d);
                int grouped = Layouts.groupLayout(s, 0).groupedTokens();
                decode(s, d, mid, TOTAL);
                assertTrue(Layouts.groupLayout(s, 0).groupedTokens() > grouped);
                assertTrue(freeBytes(e) < afterCommit);
            }
            assertEquals(afterCommit, freeBytes(e), "a close without commit frees the appended groups and blocks");
            try (KvSequence s = e.openSequence("s"); Arena a = Arena.ofConfined()) {
                assertEquals(mid, s.tokenCount());
                MemorySegment k = a.allocate((long) mid * SHAPE.halfEntryBytes());
                MemorySegment v = a.allocate((long) mid * SHAPE.halfEntryBytes());
                s.read(1, 0, mid, k, v);
                assertEquals(-1, k.mismatch(MemorySegment.ofArray(expected[1][0]).asSlice(0, k.byteSize())));
                assertEquals(-1, v.mismatch(MemorySegment.ofArray(expected[1][1]).asSlice(0, v.byteSize())));
            }
            // Regrouping the layer in a session that had extended it: the committed groups are superseded, the rest freed.
            try (KvSequence s = e.openSequenceForAppend("s"); KvDecoder d = s.decoder(options())) {
                openLayers(d);
                decode(s, d, mid, TOTAL);
                d.close();
                KvSwap.groupLayer(s, 0, GroupOptions.defaults().withGroupSize(G));
            }
            assertEquals(afterCommit, freeBytes(e), "regroup then close without commit leaks nothing");
        }
    }

    @Test
    void maintenanceOffKeepsDecodedTokensInDram() throws Exception {
        try (KvEngine e = KvEngine.open(config())) {
            storeGrouped(e);
            DecodeOptions off = options().toBuilder().strategy(KvSwap.defaults().withReuseSlots(0).withRollingFlush(false)).build();
            try (KvSequence s = e.openSequenceForAppend("s"); KvDecoder d = s.decoder(off)) {
                openLayers(d);
                decode(s, d, PREFILL, PREFILL + 200);
                assertEquals(PREFILL, Layouts.groupLayout(s, 0).groupedTokens());
                float[] q = w.query(0, 3);
                try (KvView v = d.prefetch(0, q).await()) {
                    assertEquals(expectedView(s, 0, q, PREFILL - WINDOW, PREFILL + 200), assertBitExact(v));
                }
            }
        }
    }
}
