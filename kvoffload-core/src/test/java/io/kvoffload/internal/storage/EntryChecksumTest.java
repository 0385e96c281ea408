package io.kvoffload.internal.storage;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.HashSet;
import java.util.Set;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.Test;

/** What the entry checksum covers: the bytes, and (salted) the sequence, kind, layer and position. */
class EntryChecksumTest {
    private static final byte[] DATA = "the same sixteen".getBytes(StandardCharsets.US_ASCII);

    private static int sum(EntryChecksum c, EntryChecksum.Kind kind, int layer, int position, byte[] data) {
        return c.compute(new CRC32C(), kind, layer, position, ByteBuffer.wrap(data));
    }

    @Test
    void unsaltedIsThePlainCrc32cOfTheData() {
        CRC32C plain = new CRC32C();
        plain.update(DATA);
        assertEquals((int) plain.getValue(), sum(EntryChecksum.UNSALTED, EntryChecksum.Kind.BLOCK, 3, 64, DATA));
    }

    @Test
    void theSeedIsTheDocumentedSixteenBytesBeforeTheData() throws Exception {
        byte[] h = MessageDigest.getInstance("SHA-256").digest("seq-α".getBytes(StandardCharsets.UTF_8));
        ByteBuffer b = ByteBuffer.allocate(16 + DATA.length);
        b.put(h, 0, 8).putInt(2 << 24 | 7).putInt(1234).put(DATA);
        CRC32C expected = new CRC32C();
        expected.update(b.array());
        // Pinned to the id's bytes alone, so a restart (or another JVM) computes the same checksum.
        assertEquals((int) expected.getValue(),
                sum(EntryChecksum.forSequence("seq-α"), EntryChecksum.Kind.ENTRY, 7, 1234, DATA));
    }

    @Test
    void sameBytesElsewhereChecksumDifferently() {
        Set<Integer> seen = new HashSet<>();
        EntryChecksum a = EntryChecksum.forSequence("a");
        seen.add(sum(a, EntryChecksum.Kind.BLOCK, 0, 0, DATA));
        seen.add(sum(a, EntryChecksum.Kind.BLOCK, 0, 16, DATA));
        seen.add(sum(a, EntryChecksum.Kind.BLOCK, 1, 0, DATA));
        seen.add(sum(a, EntryChecksum.Kind.ENTRY, 0, 0, DATA));
        seen.add(sum(a, EntryChecksum.Kind.GROUP, 0, 0, DATA));
        seen.add(sum(EntryChecksum.forSequence("b"), EntryChecksum.Kind.BLOCK, 0, 0, DATA));
        seen.add(sum(EntryChecksum.UNSALTED, EntryChecksum.Kind.BLOCK, 0, 0, DATA));
        assertEquals(7, seen.size(), "every identity gives its own checksum of the same bytes");
        assertEquals(sum(a, EntryChecksum.Kind.BLOCK, 0, 16, DATA),
                sum(EntryChecksum.forSequence("a"), EntryChecksum.Kind.BLOCK, 0, 16, DATA), "deterministic");
        assertNotEquals(sum(a, EntryChecksum.Kind.ENTRY, 5, 9, DATA),
                sum(a, EntryChecksum.Kind.ENTRY, 5, 9, "the same sixteeN".getBytes(StandardCharsets.US_ASCII)));
    }

    @Test
    void computeConsumesOnlyTheBuffersRemainingBytes() {
        ByteBuffer b = ByteBuffer.allocateDirect(64);
        b.put(8, DATA);
        b.position(8).limit(8 + DATA.length);
        EntryChecksum a = EntryChecksum.forSequence("a");
        int direct = a.compute(new CRC32C(), EntryChecksum.Kind.GROUP, 2, 32, b);
        assertEquals(8 + DATA.length, b.position());
        assertEquals(sum(a, EntryChecksum.Kind.GROUP, 2, 32, DATA), direct);
    }
}
