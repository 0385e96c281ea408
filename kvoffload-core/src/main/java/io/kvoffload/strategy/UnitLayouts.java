package io.kvoffload.strategy;

import io.kvoffload.KvSequence;
import io.kvoffload.internal.sequence.SequenceAccess;
import io.kvoffload.internal.sequence.SequenceHooks;
import io.kvoffload.internal.storage.UnitLayout;
import io.kvoffload.internal.storage.UnitLayoutWriter;
import io.kvoffload.internal.util.Checks;
import java.lang.foreign.MemorySegment;

/**
 * Writes a strategy's auxiliary unit layout for one layer — a second copy of data in the strategy's
 * own arrangement beside the token-major entries, such as InstInfer's dimension-major K — from its
 * {@link SelectionStrategy#layOut}. Each unit is padded to the devices' direct-I/O alignment, so it
 * is one aligned read, carries its own checksum, and sits after the units the {@link Source} placed
 * on the same device with lower numbers, so a strategy that numbers units it reads together
 * consecutively gets them merged into one read. The write is all or nothing (a failure frees every
 * extent it took); {@link KvSequence#commit} persists the layout in the manifest as the layer's
 * {@code units} section with the owner's name, version and parameters; a later cluster or group
 * layout of the layer replaces it. Decoders read it through {@link LayerSelector#planUnits}.
 */
public final class UnitLayouts {
    private UnitLayouts() {}

    /** What the units hold and where each goes. */
    public interface Source {
        /** The device unit {@code unit} should go to (taken modulo the device count). */
        int device(int unit);

        /**
         * The KV head whose data unit {@code unit} holds, or -1 (the default) if it holds several. Under
         * {@link io.kvoffload.Placement#HEAD_SHARDED} a head's units go to the device that serves its
         * head group in the unit's {@link #row}, instead of {@link #device}: each device serves whole
         * heads (InstInfer's head sharding); -1 units stay where {@link #device} puts them.
         */
        default int kvHead(int unit) {
            return -1;
        }

        /**
         * The row of unit {@code unit}, at least 0 (default: the unit itself): the units of one row hold
         * the same tokens' heads, and a head-sharded layout starts each row's head groups one device
         * further than the last row's, so consecutive rows spread over the SSDs.
         */
        default int row(int unit) {
            return unit;
        }

        /** Writes unit {@code unit}'s bytes into {@code dst} (exactly {@code unitBytes} long). */
        void fill(int unit, MemorySegment dst);
    }

    /**
     * Writes {@code unitCount} units of {@code unitBytes} bytes for {@code layer} of a writable
     * sequence, owned by {@code owner}; a unit layout the layer had is replaced.
     *
     * @param owner the name of the format's owner, returned by {@link LayerContext#units()}: usually
     *     the strategy's {@link SelectionStrategy#name()}, or a name its variants share
     * @param version the owner's format version, 0..65535
     * @param params the owner's settings (at most 64 KiB), returned by {@link LayerContext#units()}
     * @throws IllegalArgumentException on a bad argument, naming it
     * @throws IllegalStateException if the sequence is read-only or closed
     */
    public static StoredUnits write(KvSequence sequence, int layer, String owner, int version, byte[] params,
            int unitBytes, int unitCount, Source source) {
        Checks.notNull("sequence", sequence);
        Checks.notNull("owner", owner);
        if (owner.isEmpty() || owner.length() > 256) {
            throw new IllegalArgumentException("owner = \"" + owner + "\"; allowed: 1..256 characters");
        }
        Checks.notNull("params", params);
        Checks.notNull("source", source);
        Checks.inRange("version", version, 0, 0xFFFF);
        Checks.positive("unitBytes", unitBytes);
        Checks.positive("unitCount", unitCount);
        SequenceHooks hooks = SequenceAccess.of(sequence);
        return hooks.exclusive(() -> {
            hooks.checkWritable();
            Checks.index("layer", layer, sequence.shape().layers());
            hooks.checkNoFetchInFlight("write a unit layout");
            hooks.flushWrites();
            UnitLayout u = UnitLayoutWriter.write(hooks.store(), sequence.id(), hooks.checksum(), layer,
                    sequence.shape(), owner, version, params, unitBytes, unitCount, source);
            hooks.ledger().installUnits(layer, u);
            hooks.changed();
            return describe(u);
        });
    }

    /** What a strategy sees of {@code u}; null for null. */
    static StoredUnits describe(UnitLayout u) {
        return u == null ? null : new StoredUnits(u.owner(), u.version(), u.params(), u.unitCount(), u.unitBytes(),
                u.memoryBytes());
    }
}
