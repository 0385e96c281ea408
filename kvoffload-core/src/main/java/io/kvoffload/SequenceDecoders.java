package io.kvoffload;

import java.util.ArrayList;
import java.util.List;

/** The decoders open on a sequence handle: a re-layout or commit must not race their fetches, and closing the handle closes them. */
final class SequenceDecoders {
    private final List<KvDecoder> open = new ArrayList<>();

    void add(KvDecoder d) {
        open.add(d);
    }

    void remove(KvDecoder d) {
        open.remove(d);
    }

    /** @throws IllegalStateException if a decoder has a fetch in flight (its views not yet awaited) */
    void checkNoFetchInFlight(String what, String sequenceId) {
        for (KvDecoder d : open) {
            if (d.hasFetchInFlight()) {
                throw new IllegalStateException("cannot " + what + " sequence " + sequenceId + " while a decoder fetch"
                        + " is in flight; await its views first");
            }
        }
    }

    /** Closes every open decoder (each removes itself). */
    void closeAll() {
        for (KvDecoder d : new ArrayList<>(open)) {
            d.close();
        }
    }
}
