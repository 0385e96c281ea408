package io.kvoffload;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.testing.TestEngines;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A single-copy extent whose read fails once (a torn or bit-flipped transfer, a passing EIO) is
 * read again within the same call and served; damage that persists still fails the read, never
 * returning wrong data.
 */
class TransientFaultTest {
    static final KvShape SHAPE = new KvShape(2, 8, 2, 16, DType.BF16);

    @TempDir
    Path root;

    List<Path> store() throws Exception {
        List<Path> d = TestEngines.deviceDirs(root, 2);
        try (KvEngine e = KvEngine.open(TestEngines.config(d, "portable").blockTokens(16).build());
                KvSequence s = e.createSequence("a", SHAPE)) {
            TestEngines.append(s, 3, 100, 32);
            s.commit();
        }
        return d;
    }

    void readsBackAfterOneFault(FaultInjection one) throws Exception {
        List<Path> d = store();
        try (KvEngine e = KvEngine.open(TestEngines.config(d, "portable").blockTokens(16).faultInjection(one).build());
                KvSequence s = e.openSequence("a")) {
            assertNull(TestEngines.verify(s, 3, TestEngines.all(100)));
            KvStats st = e.stats();
            assertEquals(1, st.injectedFaults().values().stream().mapToLong(Long::longValue).sum(), st.toString());
            assertEquals(1, st.rereads(), st.toString());
        }
    }

    @Test
    void aBitFlippedTransferIsReadAgain() throws Exception {
        readsBackAfterOneFault(FaultInjection.builder(1).bitFlipRead(1).atMost(1).build());
    }

    @Test
    void aTornTransferIsReadAgain() throws Exception {
        readsBackAfterOneFault(FaultInjection.builder(2).tornRead(1).atMost(1).build());
    }

    @Test
    void aPassingEioIsReadAgain() throws Exception {
        readsBackAfterOneFault(FaultInjection.builder(3).eio(1).atMost(1).build());
    }

    @Test
    void persistentFaultsStillFailTheRead() throws Exception {
        List<Path> d = store();
        FaultInjection always = FaultInjection.builder(4).bitFlipRead(1).build();
        try (KvEngine e = KvEngine.open(TestEngines.config(d, "portable").blockTokens(16).faultInjection(always).build());
                KvSequence s = e.openSequence("a")) {
            KvChecksumException ex = assertThrows(KvChecksumException.class,
                    () -> TestEngines.verify(s, 3, TestEngines.all(100)));
            assertTrue(ex.getMessage().contains("sequence a"), ex.getMessage());
            assertEquals(0, e.stats().rereads());
        }
    }
}
