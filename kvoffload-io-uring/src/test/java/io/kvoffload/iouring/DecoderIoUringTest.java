package io.kvoffload.iouring;

import static org.junit.jupiter.api.Assertions.assertEquals;
import io.kvoffload.strategy.swarm.Swarm;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.DType;
import io.kvoffload.DecodeOptions;
import io.kvoffload.KvChecksumException;
import io.kvoffload.KvConfig;
import io.kvoffload.KvDecoder;
import io.kvoffload.KvEngine;
import io.kvoffload.KvSequence;
import io.kvoffload.KvShape;
import io.kvoffload.KvView;
import io.kvoffload.testing.KvViews;
import io.kvoffload.testing.TestEngines;
import io.kvoffload.workload.SyntheticWorkload;
import io.kvoffload.workload.WorkloadSpec;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayDeque;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The decoder on io_uring with rings far smaller than a fetch, so every fetch's reads pass through
 * the ring's backlog and are gathered run by run as they land while the next fetches wait behind
 * them: the views stay bit-exact, and a corrupted entry fails its fetch without leaving reads in
 * flight under a reused staging slot.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
@ExtendWith(IoUringRequired.class)
class DecoderIoUringTest {
    static final KvShape SHAPE = new KvShape(3, 8, 2, 64, DType.BF16);
    static final int TOKENS = 4096;

    @TempDir
    Path dir;

    private SyntheticWorkload w;
    private final byte[][][] expected = new byte[SHAPE.layers()][2][];

    @BeforeEach
    void workload() {
        w = new SyntheticWorkload(WorkloadSpec.builder(SHAPE, TOKENS).seed(9).build());
    }

    /** queueDepth 2 per device: at most 4 reads in flight on a ring, against hundreds per fetch. */
    private KvConfig config() {
        return TestEngines.config(TestEngines.deviceDirs(dir, 2), "io_uring").queueDepth(2).build();
    }

    private void store(KvEngine e) {
        byte[][][] stored = TestEngines.storeClustered(e, "a", w, TOKENS, 100, 32);
        System.arraycopy(stored, 0, expected, 0, stored.length);
    }

    @Test
    void threeFetchesInFlightThroughATinyRingStayBitExact() throws Exception {
        try (KvEngine e = KvEngine.open(config())) {
            assertEquals("io_uring", e.stats().ioBackend());
            store(e);
            DecodeOptions o = DecodeOptions.builder().strategy(Swarm.defaults()).cacheBytes(0).sparsity(0.3).pipelineDepth(3).build();
            try (KvSequence s = e.openSequence("a"); KvDecoder d = s.decoder(o)) {
                ArrayDeque<KvView> pending = new ArrayDeque<>();
                int total = 8 * SHAPE.layers();
                int issued = 0;
                for (int done = 0; done < total; done++) {
                    while (pending.size() < 3 && issued < total) {
                        int l = issued % SHAPE.layers();
                        pending.add(d.prefetch(l, w.query(l, issued / SHAPE.layers())));
                        issued++;
                    }
                    try (KvView v = pending.poll().await()) {
                        int rows = KvViews.assertBitExact(v, expected[v.layer()]).cardinality();
                        assertEquals(v.tokenCount(), rows);
                        assertTrue(rows >= 0.3 * TOKENS, "the budget was filled: " + rows);
                    }
                }
                assertTrue(d.stats().readRequests() > 20L * total, "fetches were many times the ring: "
                        + d.stats().readRequests() + " reads in " + total + " fetches");
            }
        }
    }

    @Test
    void corruptedEntryFailsItsFetchAndTheSlotIsReusable() throws Exception {
        KvConfig cfg = config();
        try (KvEngine e = KvEngine.open(cfg)) {
            store(e);
            DecodeOptions o = DecodeOptions.builder().strategy(Swarm.defaults()).cacheBytes(0).sinkTokens(0).localWindow(0).sparsity(1.0)
                    .pipelineDepth(2).build();
            try (KvSequence s = e.openSequence("a"); KvDecoder d = s.decoder(o)) {
                // A clean step first: each layer's first fetch also loads its medoid keys.
                for (int l = 0; l < 2; l++) {
                    try (KvView v = d.prefetch(l, w.query(l, 0)).await()) {
                        assertEquals(TOKENS, KvViews.assertBitExact(v, expected[l]).cardinality());
                    }
                }
                corrupt(cfg.ssdDirectories().get(0).resolve("kvoffload.pool"));
                for (int i = 0; i < 4; i++) {
                    KvView first = d.prefetch(0, w.query(0, i));
                    KvView second = d.prefetch(1, w.query(1, i));
                    KvChecksumException ex = assertThrows(KvChecksumException.class, first::await);
                    assertTrue(ex.getMessage().contains("layer 0"), ex.getMessage());
                    assertFalse(first.isReady());
                    assertThrows(KvChecksumException.class, second::await);
                }
                assertTrue(e.stats().checksumFailures() >= 8, "every fetch failed: " + e.stats().checksumFailures());
            }
        }
    }

    /** Flips 4 bytes every 16 KiB of a pool file: some entry of every full fetch is hit. */
    private static void corrupt(Path pool) throws java.io.IOException {
        try (FileChannel ch = FileChannel.open(pool, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            ByteBuffer b = ByteBuffer.allocate(4);
            for (long at = 100; at < ch.size(); at += 16 << 10) {
                b.clear();
                ch.read(b, at);
                b.putInt(0, ~b.getInt(0)).clear();
                ch.write(b, at);
            }
        }
    }
}
