package io.kvoffload.internal.storage;

import io.kvoffload.KvShape;
import java.util.List;

/**
 * The durable description of one committed sequence: its shape, token ids, and for every layer
 * the extent, device and CRC32C of each block. Devices are named by UUID so directories may be
 * reordered between runs.
 *
 * @param id sequence id
 * @param shape the model shape
 * @param blockTokens tokens per block
 * @param deviceUuids the devices the extents refer to, by manifest-local index
 * @param tokenIds the sequence's token ids (every layer holds KV for all of them)
 * @param layers per layer, the block table (device = manifest-local device index); a block whose
 *     tokens all live in the layer's cluster layout has no extent; a block a fork shares with the
 *     sequence it was forked from is marked shared, with its writer's checksum identity
 *     ({@link BlockTable#shared}, format version 7)
 * @param clusters per layer, the cluster layout, or null where the layer has none
 * @param groups per layer, the KVSwap group layout (with its adapter), or null where the layer has
 *     none; a layer has at most one of a cluster and a group layout
 * @param units per layer, a strategy's auxiliary unit layout (InstInfer's dimension-major K copy, for
 *     one), or null where the layer has none; it sits beside the layer's cluster or group layout
 * @param commitMillis when it was committed
 * @param commitNumber one more with each commit of this id; a sequence created again under a deleted
 *     id starts past the deleted one's numbers ({@link Store#numberingBase}), so copies of the two
 *     are never confused
 * @param identityChecksums whether the recorded checksums are seeded with each record's identity
 *     ({@link EntryChecksum#forSequence}, format version 5 on); false for a sequence first committed
 *     in an older version, whose checksums are plain CRC32C ({@link EntryChecksum#UNSALTED})
 */
public record Manifest(String id, KvShape shape, int blockTokens, List<String> deviceUuids, int[] tokenIds,
        BlockTable[] layers, ClusterLayout[] clusters, GroupLayout[] groups, UnitLayout[] units, long commitMillis,
        long commitNumber, boolean identityChecksums) {

    /** A manifest with no unit layouts. */
    public Manifest(String id, KvShape shape, int blockTokens, List<String> deviceUuids, int[] tokenIds,
            BlockTable[] layers, ClusterLayout[] clusters, GroupLayout[] groups, long commitMillis, long commitNumber,
            boolean identityChecksums) {
        this(id, shape, blockTokens, deviceUuids, tokenIds, layers, clusters, groups, new UnitLayout[layers.length],
                commitMillis, commitNumber, identityChecksums);
    }

    /** A manifest with identity-seeded checksums (what this version writes). */
    public Manifest(String id, KvShape shape, int blockTokens, List<String> deviceUuids, int[] tokenIds,
            BlockTable[] layers, ClusterLayout[] clusters, GroupLayout[] groups, long commitMillis, long commitNumber) {
        this(id, shape, blockTokens, deviceUuids, tokenIds, layers, clusters, groups, commitMillis, commitNumber, true);
    }

    /** A manifest with no group layouts (every layer in blocks or clusters). */
    public Manifest(String id, KvShape shape, int blockTokens, List<String> deviceUuids, int[] tokenIds,
            BlockTable[] layers, ClusterLayout[] clusters, long commitMillis, long commitNumber) {
        this(id, shape, blockTokens, deviceUuids, tokenIds, layers, clusters, new GroupLayout[layers.length],
                commitMillis, commitNumber);
    }

    /** How this sequence's stored records are checksummed, per {@link #identityChecksums}. */
    public EntryChecksum entryChecksum() {
        return identityChecksums ? EntryChecksum.forSequence(id) : EntryChecksum.UNSALTED;
    }

    /** Tokens {@code [0, n)} of {@code layer} that live in its cluster or group layout rather than in blocks. */
    public int relaidTokens(int layer) {
        int n = 0;
        for (SectionKind<?> k : LayoutSections.KINDS) {
            n = Math.max(n, relaidTokens(k, layer));
        }
        return n;
    }

    private <L extends SegmentedLayout> int relaidTokens(SectionKind<L> kind, int layer) {
        L layout = kind.layouts(this)[layer];
        return layout == null ? 0 : kind.relaidTokens(layout);
    }

    public int tokenCount() {
        return tokenIds.length;
    }

    public int blocksPerLayer() {
        return (tokenIds.length + blockTokens - 1) / blockTokens;
    }

    /** Bytes of extents this sequence holds on all devices. */
    public long storedBytes() {
        long[] sum = {0};
        forEachExtent((d, off, len) -> sum[0] += len);
        return sum[0];
    }

    /** Visits every extent (blocks, cluster, group and unit segments) as (device, offset, length). */
    public void forEachExtent(ExtentVisitor v) {
        for (BlockTable t : layers) {
            for (int b = 0; b < t.size(); b++) {
                if (t.hasExtent(b)) {
                    v.visit(t.device(b), t.offset(b), t.length(b));
                }
            }
        }
        for (SectionKind<?> k : LayoutSections.KINDS) {
            for (SegmentedLayout layout : k.layouts(this)) {
                if (layout != null) {
                    for (int s = 0; s < layout.segmentCount(); s++) {
                        v.visit(layout.segmentDevice(s), layout.segmentOffset(s), layout.segmentLength(s));
                    }
                }
            }
        }
    }

    /** Receives extents. */
    @FunctionalInterface
    public interface ExtentVisitor {
        void visit(int device, long offset, long length);
    }
}
