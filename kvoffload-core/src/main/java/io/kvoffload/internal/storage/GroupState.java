package io.kvoffload.internal.storage;

import io.kvoffload.KvShape;
import java.util.ServiceLoader;

/**
 * What the strategy that grouped a layer keeps with its {@link GroupLayout} (the predictor that
 * chooses groups, e.g. a low-rank K adapter), persisted in the layout's manifest section. The store
 * treats it as opaque: it writes {@link #encode()} and reads it back through the one {@link Codec}
 * that a strategy provides ({@link ServiceLoader}), which checks it as the manifest is decoded, so
 * a damaged state rejects the manifest like any other damaged field.
 */
public interface GroupState {
    /** The persisted form, self-checking (it carries its own checksum). */
    byte[] encode();

    /** DRAM this state holds, in bytes. */
    long bytes();

    /**
     * Checks that the state fits entries of {@code entryBytes} bytes (K and V of one token).
     *
     * @throws IllegalArgumentException naming what does not fit
     */
    void checkEntryBytes(int entryBytes);

    /** Reads the persisted form of a group layout's state. Found with {@link ServiceLoader}. */
    interface Codec {
        /** What the state is called in messages ({@code "adapter"}). */
        String name();

        /**
         * Decodes {@code bytes} for a sequence of {@code shape}.
         *
         * @throws IllegalArgumentException if the bytes are damaged or do not fit the shape
         */
        GroupState decode(byte[] bytes, KvShape shape);
    }

    /** The codec of group states (the one a strategy provides). */
    static Codec codec() {
        return Codecs.CODEC;
    }

    /** Loads the codec once. */
    final class Codecs {
        static final Codec CODEC = load();

        private Codecs() {}

        private static Codec load() {
            Codec found = null;
            for (Codec c : ServiceLoader.load(Codec.class, GroupState.class.getClassLoader())) {
                if (found != null) {
                    throw new IllegalStateException("two group-state codecs are provided, " + found.getClass().getName()
                            + " and " + c.getClass().getName() + "; allowed: one");
                }
                found = c;
            }
            if (found == null) {
                throw new IllegalStateException("no " + Codec.class.getName() + " is provided (META-INF/services or the"
                        + " module's provides); kvoffload-core provides one");
            }
            return found;
        }
    }
}
