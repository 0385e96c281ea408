package io.kvoffload.iouring;

import io.kvoffload.testing.HandleOwnershipContract;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Issue #17, defects 2 and 3 on io_uring: closing the engine under running decoders never hangs,
 * and one decoder stepped from two threads is refused clearly (it used to spin in
 * {@code Ring.awaitProgress} holding the ring lock).
 */
@ExtendWith(IoUringRequired.class)
class HandleOwnershipIoUringTest extends HandleOwnershipContract {
    @Override
    protected String backend() {
        return "io_uring";
    }
}
