package io.kvoffload.strategy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.DType;
import io.kvoffload.DecodeOptions;
import io.kvoffload.DecodeStats;
import io.kvoffload.KvDecoder;
import io.kvoffload.KvEngine;
import io.kvoffload.KvSequence;
import io.kvoffload.KvShape;
import io.kvoffload.KvView;
import io.kvoffload.internal.sequence.SequenceAccess;
import io.kvoffload.testing.KvViews;
import io.kvoffload.testing.TestEngines;
import io.kvoffload.workload.SyntheticWorkload;
import io.kvoffload.workload.WorkloadSpec;
import java.nio.file.Path;
import java.util.BitSet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The default ranks parts of pages that fill one aligned read (512-byte entries: 8-token pages, 2-token
 * parts), so a step often chooses part of a page. The pipeline then reads the rest of such a page for
 * the hot cache (it comes with the same read): a step costs the same bytes and requests as without a
 * cache, the view holds only the chosen rows, bit-exact, and the pages enter the cache, so the same
 * query again reads less. A completing entry that does not verify is left out of the cache and never
 * fails the step.
 */
class PageCompletionTest {
    static final KvShape SHAPE = new KvShape(1, 8, 2, 64, DType.BF16); // 512-byte entries
    static final int TOKENS = 2048, PAGE = 8;

    @TempDir
    Path root;

    private byte[][] store(KvEngine e, String id) {
        return store(e, id, SHAPE, PAGE);
    }

    private static byte[][] store(KvEngine e, String id, KvShape shape, int page) {
        SyntheticWorkload w = new SyntheticWorkload(WorkloadSpec.builder(shape, TOKENS).seed(29).build());
        byte[][][] kv = TestEngines.storeLaidOut(e, id, w, TOKENS, Strategies.defaultStrategy());
        try (KvSequence s = e.openSequence(id)) {
            assertEquals(TOKENS / page, SequenceAccess.of(s).ledger().layer(0).clusters().clusterCount(),
                    "the default's " + page + "-token pages");
        }
        return kv[0];
    }

    private static DecodeOptions options(long cacheBytes) {
        return DecodeOptions.builder().sparsity(0.1).sinkTokens(4).localWindow(64).cacheBytes(cacheBytes).build();
    }

    private static float[] query(long seed) {
        return query(SHAPE, seed);
    }

    private static float[] query(KvShape shape, long seed) {
        java.util.Random r = new java.util.Random(seed);
        float[] q = new float[shape.queryHeads() * shape.headDim()];
        for (int i = 0; i < q.length; i++) {
            q[i] = (float) r.nextGaussian();
        }
        return q;
    }

    /** Whether some laid-out page holds a chosen row and a row not chosen. */
    private static boolean choosesPartOfAPage(BitSet rows, int windowFrom) {
        return choosesPartOfAPage(rows, windowFrom, PAGE);
    }

    private static boolean choosesPartOfAPage(BitSet rows, int windowFrom, int page) {
        for (int p = 0; p < windowFrom / page; p++) {
            int in = rows.get(p * page, p * page + page).cardinality();
            if (in > 0 && in < page && p * page >= 4) {
                return true;
            }
        }
        return false;
    }

    @Test
    void pagesChosenInPartAreReadWholeForTheCacheAtNoCost() {
        try (KvEngine e = TestEngines.open(TestEngines.config(TestEngines.deviceDirs(root, 4), "portable").build())) {
            byte[][] expected = store(e, "p");
            // The default gives up parts that open a read alone for the rest of pages it reads anyway
            // (ReadExchange), so many steps choose whole pages: take the first query that leaves one in part.
            float[] q = null;
            BitSet rows = null;
            long bytes = 0, requests = 0;
            for (long seed = 5; seed < 45 && (rows == null || !choosesPartOfAPage(rows, TOKENS - 64)); seed++) {
                q = query(seed);
                try (KvSequence s = e.openSequence("p"); KvDecoder d = s.decoder(options(0))) {
                    try (KvView v = d.prefetch(0, q).await()) {
                        rows = KvViews.assertBitExact(v, expected);
                    }
                    bytes = d.stats().bytesRead();
                    requests = d.stats().readRequests();
                    assertEquals(0, d.stats().cacheHits());
                }
            }
            assertTrue(choosesPartOfAPage(rows, TOKENS - 64), "a step chooses part of a page: " + rows);
            try (KvSequence s = e.openSequence("p"); KvDecoder d = s.decoder(options(8L << 20))) {
                try (KvView v = d.prefetch(0, q).await()) {
                    assertEquals(rows, KvViews.assertBitExact(v, expected), "the view holds the chosen rows only");
                }
                DecodeStats first = d.stats();
                // The rest of each page comes with the block its parts are read from.
                assertTrue(first.bytesRead() <= bytes, "completing the pages costs no byte: " + first.bytesRead()
                        + " against " + bytes);
                assertTrue(first.readRequests() <= requests, "and no request: " + first.readRequests() + " against "
                        + requests);
                assertEquals(rows.cardinality() - first.tokensWindow(), first.tokensFetched(), first.toString());
                try (KvView v = d.prefetch(0, q).await()) {
                    assertEquals(rows, KvViews.assertBitExact(v, expected));
                }
                DecodeStats second = d.stats();
                assertTrue(second.cacheHits() > 0, second.toString());
                assertEquals(0, second.bytesRead() - first.bytesRead(), "every chosen page came from the cache");
            }
        }
    }

    /**
     * Pages of more than one read (1.5 KiB entries: 4-token pages of 6 KiB) are ranked in parts too (one
     * token each), but not completed: the rest of such a page would cost reads of its own. A step with the
     * cache reads exactly what one without it reads, the view holds the chosen rows only, bit-exact, and
     * the same query again reads only the pages it chose in part (those it chose whole come from the cache).
     */
    @Test
    void pagesOfSeveralReadsAreRankedInPartsAndNotCompleted() {
        KvShape wide = new KvShape(1, 8, 4, 96, DType.BF16); // 1.5 KiB entries
        try (KvEngine e = TestEngines.open(TestEngines.config(TestEngines.deviceDirs(root, 4), "portable").build())) {
            byte[][] expected = store(e, "w", wide, 4);
            float[] q = query(wide, 11);
            BitSet rows;
            long bytes;
            try (KvSequence s = e.openSequence("w"); KvDecoder d = s.decoder(options(0))) {
                try (KvView v = d.prefetch(0, q).await()) {
                    rows = KvViews.assertBitExact(v, expected);
                }
                bytes = d.stats().bytesRead();
            }
            assertTrue(choosesPartOfAPage(rows, TOKENS - 64, 4), "the step chooses part of a page: " + rows);
            try (KvSequence s = e.openSequence("w"); KvDecoder d = s.decoder(options(8L << 20))) {
                try (KvView v = d.prefetch(0, q).await()) {
                    assertEquals(rows, KvViews.assertBitExact(v, expected), "the view holds the chosen rows only");
                }
                DecodeStats first = d.stats();
                assertEquals(bytes, first.bytesRead(), "nothing is read to complete a page of several reads");
                try (KvView v = d.prefetch(0, q).await()) {
                    assertEquals(rows, KvViews.assertBitExact(v, expected));
                }
                DecodeStats second = d.stats();
                long again = second.bytesRead() - first.bytesRead();
                assertTrue(second.cacheHits() > 0, "pages chosen whole are cached: " + second);
                assertTrue(again > 0 && again < bytes, "pages chosen in part are read again, the rest is not: "
                        + again + " of " + bytes);
            }
        }
    }

    /**
     * A page's entry that the step reads only for the cache, damaged on disk: the step still returns
     * its chosen rows bit-exact (the damaged entry is not one of them), the page stays out of the cache,
     * and the mismatch is counted.
     */
    @Test
    void aCompletingEntryThatDoesNotVerifyLeavesItsPageUncached() {
        io.kvoffload.KvConfig cfg = TestEngines.config(TestEngines.deviceDirs(root, 4), "portable").build();
        try (KvEngine e = TestEngines.open(cfg)) {
            byte[][] expected = store(e, "c");
            float[] q = query(7);
            BitSet rows;
            try (KvSequence s = e.openSequence("c"); KvDecoder d = s.decoder(options(0))) {
                try (KvView v = d.prefetch(0, q).await()) {
                    rows = KvViews.assertBitExact(v, expected);
                }
            }
            int victim = -1;
            for (int p = 1; p < (TOKENS - 64) / PAGE && victim < 0; p++) {
                int in = rows.get(p * PAGE, p * PAGE + PAGE).cardinality();
                if (in > 0 && in < PAGE) {
                    victim = rows.nextClearBit(p * PAGE); // in the page, not chosen
                }
            }
            assertTrue(victim > 0, "a page chosen in part");
            try (KvSequence s = e.openSequence("c"); KvDecoder d = s.decoder(options(8L << 20))) {
                // A first step opens the layer, whose index is built from every key (a damaged key
                // would fail that); emptying the cache forgets what it read.
                d.prefetch(0, query(8)).await().close();
                d.setCacheBytes(0);
                d.setCacheBytes(8L << 20);
                io.kvoffload.testing.PoolDamage.damageEntry(e, cfg, "c", victim);
                long failuresBefore = e.stats().checksumFailures();
                try (KvView v = d.prefetch(0, q).await()) {
                    assertEquals(rows, KvViews.assertBitExact(v, expected));
                }
                assertTrue(e.stats().checksumFailures() > failuresBefore, "the mismatch is counted");
                long bytes = d.stats().bytesRead();
                try (KvView v = d.prefetch(0, q).await()) {
                    assertEquals(rows, KvViews.assertBitExact(v, expected));
                }
                assertTrue(d.stats().bytesRead() > bytes, "the damaged page is read again, not served from the cache");
            }
        }
    }
}
