package io.kvoffload.iouring;

import io.kvoffload.testing.AbstractRoundTripProperties;
import net.jqwik.api.lifecycle.BeforeProperty;

/**
 * The foundation's storage round trip (random shapes, dtypes, token counts, block sizes, devices
 * and read sets; write, commit, reopen, read back bit-exact) on the io_uring backend.
 */
class IoUringRoundTripProperties extends AbstractRoundTripProperties {
    @BeforeProperty
    void ioUringAvailable() {
        IoUringTestSupport.requireIoUring();
    }

    @Override
    protected String backend() {
        return "io_uring";
    }
}
