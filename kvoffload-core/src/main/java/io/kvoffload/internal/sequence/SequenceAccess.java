package io.kvoffload.internal.sequence;

import io.kvoffload.KvSequence;
import java.util.function.Function;

/**
 * The one door from a {@link KvSequence} to its {@link SequenceHooks}: the sequence installs the
 * lookup when its class initialises (the pattern the JDK uses for its shared secrets), so the hooks
 * stay out of the public API.
 */
public final class SequenceAccess {
    private static volatile Function<KvSequence, SequenceHooks> lookup;

    private SequenceAccess() {}

    /** Called once, by {@link KvSequence}'s static initialiser. */
    public static void install(Function<KvSequence, SequenceHooks> l) {
        if (lookup != null) {
            throw new IllegalStateException("sequence hooks are installed already");
        }
        lookup = l;
    }

    /** The hooks of {@code sequence}. */
    public static SequenceHooks of(KvSequence sequence) {
        if (sequence == null) {
            throw new NullPointerException("sequence must not be null");
        }
        // An instance exists, so KvSequence has been initialised and the lookup installed.
        return lookup.apply(sequence);
    }
}
