package io.kvoffload.internal.storage;

import io.kvoffload.internal.sched.BucketScheduler;
import io.kvoffload.internal.util.Checks;

/**
 * A strategy's auxiliary layout of one layer, beside the token-major entries the pipeline fetches:
 * {@code unitCount} fixed-size units (InstInfer's dimension-major copy of K, for one), each
 * {@link #unitBytes()} data bytes padded to the devices' direct-I/O alignment (the <em>stride</em>),
 * so a unit is one aligned read and units adjacent in a segment merge into one read. Each unit
 * carries its own {@link EntryChecksum} ({@link EntryChecksum.Kind#UNIT}, seeded with its index).
 * What a unit holds is the owning strategy's: the layout records only its {@link #owner()} name,
 * the {@link #version()} of its format and its opaque {@link #params()}, which the strategy reads
 * back when it opens the layer.
 *
 * <p>Head-sharded ({@link io.kvoffload.Placement#HEAD_SHARDED}): a unit that holds one KV head's
 * data (the source says which) belongs to that head's head group ({@link #unitShard}) and sits on
 * the device {@link HeadShards#device} gives the group in its row, so each device serves whole
 * heads; {@link #shards()} records the head groups. Immutable; as a {@link BucketScheduler.Replicas}
 * its unit is a unit (one copy, {@link #stride()} bytes).
 */
public final class UnitLayout extends SegmentedLayout implements BucketScheduler.Replicas {
    /** Largest {@link #params()}: the strategy's settings, not data. */
    public static final int MAX_PARAMS_BYTES = 1 << 16;

    final String owner;
    final int version;
    final byte[] params;
    final int unitBytes;
    final int stride;
    /** Segment of each unit; a segment's units sit in ascending unit order at consecutive strides. */
    final int[] unitSeg;
    final int[] unitCrc;
    /** Head groups the layout's head units are placed by ({@link HeadShards}); 1: token-striped. */
    final int shards;
    /** Per unit, the head group it holds, or {@link #NO_SHARD} (several heads, placed by the source); null when {@code shards == 1}. */
    final int[] unitShard;
    private final long[] unitOffset;

    /** {@link #unitShard} of a unit that holds no single head group. */
    public static final int NO_SHARD = -1;

    UnitLayout(String owner, int version, byte[] params, int unitBytes, int stride, int[] segDevice, long[] segOffset,
            int[] segLength, int[] unitSeg, int[] unitCrc) {
        this(owner, version, params, unitBytes, stride, segDevice, segOffset, segLength, unitSeg, unitCrc, 1, null);
    }

    /**
     * A layout whose units holding one KV head each were placed by head group: {@code unitShard[u]}
     * is unit {@code u}'s head group ({@code 0..shards-1}) or {@link #NO_SHARD}; null (or
     * {@code shards == 1}) for a token-striped layout.
     */
    UnitLayout(String owner, int version, byte[] params, int unitBytes, int stride, int[] segDevice, long[] segOffset,
            int[] segLength, int[] unitSeg, int[] unitCrc, int shards, int[] unitShard) {
        super(segDevice, segOffset, segLength);
        if (shards < 1 || shards > 0xFFFF || (shards > 1) != (unitShard != null)
                || (unitShard != null && unitShard.length != unitSeg.length)) {
            throw new IllegalArgumentException("unit layout of " + shards + " head groups has "
                    + (unitShard == null ? "no" : unitShard.length) + " unit head groups for " + unitSeg.length
                    + " units; allowed: 1..65535 head groups, one head group (or none) per unit when above 1");
        }
        for (int u = 0; unitShard != null && u < unitShard.length; u++) {
            if (unitShard[u] < NO_SHARD || unitShard[u] >= shards) {
                throw new IllegalArgumentException("unit " + u + " is in head group " + unitShard[u] + "; allowed: "
                        + NO_SHARD + " (none) or 0.." + (shards - 1));
            }
        }
        this.shards = shards;
        this.unitShard = unitShard;
        Checks.notNull("owner", owner);
        if (owner.isEmpty() || owner.length() > 256) {
            throw new IllegalArgumentException("owner = \"" + owner + "\"; allowed: a strategy name of 1..256 characters");
        }
        Checks.inRange("version", version, 0, 0xFFFF);
        if (params.length > MAX_PARAMS_BYTES) {
            throw new IllegalArgumentException("params of " + params.length + " bytes; allowed: at most "
                    + MAX_PARAMS_BYTES);
        }
        if (unitBytes < 1 || stride < unitBytes || stride > (8 << 20)) {
            throw new IllegalArgumentException("unit stride " + stride + " cannot hold units of " + unitBytes
                    + " bytes; allowed: unitBytes 1..stride, stride up to 8 MiB");
        }
        int units = unitSeg.length;
        int segs = segDevice.length;
        if (units < 1 || unitCrc.length != units || segOffset.length != segs || segLength.length != segs) {
            throw new IllegalArgumentException("unit layout arrays are inconsistent: " + segs + " segments, " + units
                    + " units, " + unitCrc.length + " checksums; allowed: at least one unit, one checksum each");
        }
        this.owner = owner;
        this.version = version;
        this.params = params.clone();
        this.unitBytes = unitBytes;
        this.stride = stride;
        this.unitSeg = unitSeg;
        this.unitCrc = unitCrc;
        this.unitOffset = stridedOffsets("unit", unitSeg, segOffset, segLength, stride);
    }

    /** The strategy that wrote this layout ({@link io.kvoffload.strategy.SelectionStrategy#name()}). */
    public String owner() {
        return owner;
    }

    /** The version of the owner's format. */
    public int version() {
        return version;
    }

    /** The owner's settings (a copy). */
    public byte[] params() {
        return params.clone();
    }

    public int unitCount() {
        return unitSeg.length;
    }

    /** Data bytes of one unit. */
    public int unitBytes() {
        return unitBytes;
    }

    /** Bytes between consecutive units of a segment (the data padded to the alignment). */
    public int stride() {
        return stride;
    }

    public int unitDevice(int unit) {
        return segDevice[unitSeg[unit]];
    }

    public long unitOffset(int unit) {
        return unitOffset[unit];
    }

    public int unitCrc(int unit) {
        return unitCrc[unit];
    }

    /** Head groups the layout's head units were placed by (1: token-striped). */
    @Override
    public int shards() {
        return shards;
    }

    /** The head group unit {@code unit} holds, or {@link #NO_SHARD} (always, when not head-sharded). */
    public int unitShard(int unit) {
        return unitShard == null ? NO_SHARD : unitShard[unit];
    }

    @Override
    public int count(int unit) {
        return 1;
    }

    @Override
    public int device(int unit, int r) {
        return segDevice[unitSeg[unit]];
    }

    @Override
    public long offset(int unit, int r) {
        return unitOffset[unit];
    }

    /** The same layout with device numbers rewritten through {@code map}. */
    UnitLayout remapDevices(int[] map) {
        int[] dev = remapped(segDevice, map);
        return new UnitLayout(owner, version, params, unitBytes, stride, dev, segOffset, segLength, unitSeg, unitCrc,
                shards, unitShard);
    }

    /** DRAM held by this layout's tables, in bytes. */
    public long memoryBytes() {
        return 4L * (segDevice.length + segLength.length + unitSeg.length + unitCrc.length
                + (unitShard == null ? 0 : unitShard.length))
                + 8L * (segOffset.length + unitOffset.length) + params.length;
    }
}
