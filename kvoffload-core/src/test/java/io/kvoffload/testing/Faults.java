package io.kvoffload.testing;

import io.kvoffload.KvSequence;
import io.kvoffload.internal.io.FaultInjectingBackend;
import io.kvoffload.internal.io.ForwardingIoBackend;
import io.kvoffload.internal.sequence.SequenceAccess;
import io.kvoffload.spi.IoBackend;

/**
 * Arms injected faults at a chosen point of a test, on the engine that {@code s} belongs to,
 * instead of counting the requests its setup makes (which depends on what the engine does before
 * the call under test and is not a contract).
 */
public final class Faults {
    private Faults() {}

    /**
     * Makes the engine's vanishing device ({@code FaultInjection.Builder.vanishingDevice}; configure
     * it with {@code Long.MAX_VALUE} requests to have it vanish only when armed) fail every request
     * from now on.
     *
     * @throws IllegalStateException when the engine has no fault injection
     */
    public static void vanishNow(KvSequence s) {
        IoBackend b = SequenceAccess.of(s).store().backend();
        while (b instanceof ForwardingIoBackend f) {
            if (f instanceof FaultInjectingBackend faults) {
                faults.vanishNow();
                return;
            }
            b = f.inner();
        }
        throw new IllegalStateException("the engine has no fault injection (backend " + b.name() + ")");
    }
}
