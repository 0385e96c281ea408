package io.kvoffload.internal.storage;

import io.kvoffload.KvShape;
import io.kvoffload.internal.util.Checks;

/** Argument checks the layout writers ({@link ClusterLayoutWriter}, {@link GroupLayoutWriter}) share. */
final class LayoutArgs {
    private LayoutArgs() {}

    /**
     * The checks of an append to a layout {@code old} of {@code oldEntryBytes}-byte entries: every
     * argument present, {@code layer} one of {@code shape}'s, and {@code shape} the one the layout was
     * written with (same entry size).
     */
    static void checkAppend(Store store, String owner, EntryChecksum checksum, int layer, KvShape shape, Object old,
            int oldEntryBytes) {
        Checks.notNull("store", store);
        Checks.notNull("owner", owner);
        Checks.notNull("checksum", checksum);
        Checks.notNull("shape", shape);
        Checks.index("layer", layer, shape.layers());
        Checks.notNull("old", old);
        if (shape.entryBytes() != oldEntryBytes) {
            throw new IllegalArgumentException("shape.entryBytes() = " + shape.entryBytes() + " does not match the"
                    + " layout's " + oldEntryBytes + "-byte entries; allowed: the shape the layout was written with");
        }
    }
}
