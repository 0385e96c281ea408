package io.kvoffload.internal.remote;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;

/** Every change to a framed blob, or reading it under another key, fails verification. */
class RemoteBlobTest {
    @Property(tries = 200)
    void anyChangeIsDetected(@ForAll @Size(min = 0, max = 300) byte[] payload, @ForAll @IntRange(min = 0, max = 10_000) int at,
            @ForAll @IntRange(min = 0, max = 7) int bit) {
        byte[] blob = RemoteBlob.allocate(payload.length);
        System.arraycopy(payload, 0, blob, RemoteBlob.HEADER, payload.length);
        RemoteBlob.seal("k:1", blob);
        assertTrue(RemoteBlob.verify("k:1", blob, payload.length));
        assertTrue(RemoteBlob.verify("k:1", blob, -1));
        assertFalse(RemoteBlob.verify("k:2", blob, payload.length), "another key's blob");
        assertFalse(RemoteBlob.verify("k:1", blob, payload.length + 1), "another length");
        assertFalse(RemoteBlob.verify("k:1", Arrays.copyOf(blob, blob.length - 1), -1), "truncated");
        assertFalse(RemoteBlob.verify("k:1", null, -1), "absent");
        byte[] flipped = blob.clone();
        flipped[at % blob.length] ^= (byte) (1 << bit);
        assertFalse(RemoteBlob.verify("k:1", flipped, -1), "one bit flipped at " + (at % blob.length));
    }

    @Property(tries = 50)
    void blockRecordsMatchOnlyTheirTokens(@ForAll @Size(min = 32, max = 32) int[] tokens,
            @ForAll @IntRange(min = 0, max = 15) int changed) {
        byte[] rec = RemoteRecords.block("r", 4, tokens, 16, 16);
        assertTrue(RemoteRecords.blockMatches("r", rec, 4, tokens, 16, 16));
        assertFalse(RemoteRecords.blockMatches("r", rec, 5, tokens, 16, 16), "another layer count");
        int[] other = tokens.clone();
        other[16 + changed] ^= 1;
        assertFalse(RemoteRecords.blockMatches("r", rec, 4, other, 16, 16), "another prompt's block");
    }
}
