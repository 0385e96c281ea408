package io.kvoffload;

import io.kvoffload.testing.AbstractRoundTripProperties;

/** The round-trip property on the portable FileChannel backend. */
class PortableRoundTripProperties extends AbstractRoundTripProperties {
    @Override
    protected String backend() {
        return "portable";
    }
}
