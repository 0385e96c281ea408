package io.kvoffload.iouring;

import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * The io_uring gate as a JUnit extension: {@code @ExtendWith(IoUringRequired.class)} runs
 * {@link IoUringTestSupport#requireIoUring()} before each test, ahead of the class's own
 * {@code @BeforeEach} methods, so a test class needs no gate method of its own.
 */
public final class IoUringRequired implements BeforeEachCallback {
    @Override
    public void beforeEach(ExtensionContext context) {
        IoUringTestSupport.requireIoUring();
    }
}
