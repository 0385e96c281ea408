package io.kvoffload.iouring;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.spi.IoBatch;
import io.kvoffload.spi.IoDevice;
import io.kvoffload.spi.IoOptions;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue #17, defect 4 (io_uring backend): a batch whose buffer was freed after it was added is
 * refused at submit, before any SQE reaches the kernel.
 */
@ExtendWith(IoUringRequired.class)
class FreedBufferSubmitIoUringTest {
    @TempDir
    Path dir;

    @Test
    void submitRefusesAFreedBufferBeforeTheKernelSeesIt() throws Exception {
        List<IoDevice> devices = IoUringTestSupport.devices(dir, 1, 1 << 16, 11);
        IoOptions options = new IoOptions(true, 64, 1);
        try (IoUringBackend backend = IoUringBackend.open(devices, options, IoUringConfig.defaults(options, 1));
                Arena live = Arena.ofShared()) {
            IoBatch batch = backend.newBatch(2);
            MemorySegment kept = IoUringTestSupport.buffer(live, 4096);
            Arena doomed = Arena.ofShared();
            MemorySegment freed = IoUringTestSupport.buffer(doomed, 4096);
            batch.addRead(0, 0, kept, 0);
            batch.addRead(0, 4096, freed, 1);
            doomed.close();
            IoUringStats before = backend.stats();

            IllegalStateException e = assertThrows(IllegalStateException.class, () -> backend.submit(batch));
            assertTrue(e.getMessage().contains("request 1") && e.getMessage().contains("freed"), e.getMessage());
            assertEquals(0, batch.pending(), "nothing is in flight");
            IoUringStats after = backend.stats();
            assertEquals(before.submitCalls(), after.submitCalls(), "no io_uring_submit happened");
            assertEquals(before.plainIos() + before.fixedIos(), after.plainIos() + after.fixedIos(),
                    "no SQE was queued");

            batch.clear();
            batch.addRead(0, 0, kept, 0);
            backend.execute(batch);
            assertArrayEquals(IoUringTestSupport.readFile(devices.get(0).poolFile(), 0, 4096),
                    kept.toArray(ValueLayout.JAVA_BYTE));
        }
    }
}
