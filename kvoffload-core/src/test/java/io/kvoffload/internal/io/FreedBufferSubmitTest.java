package io.kvoffload.internal.io;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.spi.IoBatch;
import io.kvoffload.spi.IoDevice;
import io.kvoffload.spi.IoOptions;
import java.io.RandomAccessFile;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue #17, defect 4 (portable backend): a batch whose buffer was freed after it was added is
 * refused at submit with a clear exception, and none of its requests runs.
 */
class FreedBufferSubmitTest {
    @TempDir
    Path dir;

    @Test
    void submitRefusesAFreedBufferAndStartsNothing() throws Exception {
        Path pool = dir.resolve("pool-0.kvo");
        try (RandomAccessFile raf = new RandomAccessFile(pool.toFile(), "rw")) {
            byte[] ones = new byte[1 << 16];
            java.util.Arrays.fill(ones, (byte) 1);
            raf.write(ones);
        }
        List<IoDevice> devices = List.of(new IoDevice(0, pool, 1 << 16, 4096));
        try (PortableIoBackend backend = new PortableIoBackend(devices, new IoOptions(true, 64, 2));
                Arena live = Arena.ofShared()) {
            IoBatch batch = backend.newBatch(2);
            MemorySegment kept = live.allocate(4096, 4096);
            Arena doomed = Arena.ofShared();
            MemorySegment freed = doomed.allocate(4096, 4096);
            batch.addRead(0, 0, kept, 0);
            batch.addRead(0, 4096, freed, 1);
            doomed.close();

            IllegalStateException e = assertThrows(IllegalStateException.class, () -> backend.submit(batch));
            assertTrue(e.getMessage().contains("request 1") && e.getMessage().contains("freed"), e.getMessage());
            assertEquals(0, batch.pending(), "nothing is in flight");
            Thread.sleep(50);
            assertEquals(0, kept.get(ValueLayout.JAVA_BYTE, 0), "the live request was not started either");

            // The batch stays usable once the freed request is gone.
            batch.clear();
            batch.addRead(0, 0, kept, 0);
            backend.execute(batch);
            assertEquals(1, kept.get(ValueLayout.JAVA_BYTE, 0));
        }
    }

    @Test
    void addRefusesAFreedBuffer() {
        IoBatch batch = new IoBatch(List.of(new IoDevice(0, dir.resolve("x"), 1 << 16, 4096)), 1);
        Arena a = Arena.ofShared();
        MemorySegment s = a.allocate(4096, 4096);
        a.close();
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> batch.addRead(0, 0, s, 0));
        assertTrue(e.getMessage().contains("freed"), e.getMessage());
        assertEquals(0, batch.size());
    }
}
