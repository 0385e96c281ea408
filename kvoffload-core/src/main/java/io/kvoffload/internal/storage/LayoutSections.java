package io.kvoffload.internal.storage;

import io.kvoffload.KvShape;
import java.util.Arrays;
import java.util.List;

/**
 * The registry of layout section kinds: every strategy layout a manifest layer may hold contributes
 * its {@link SectionKind} here, in the order sections are written (and the per-layer flag blocks of
 * manifest versions 2 to 5 are read). {@link ManifestCodec} works from this list alone.
 */
final class LayoutSections {
    /** The kinds, in write order. */
    static final List<SectionKind<?>> KINDS = List.of(ClusterSection.KIND, GroupSection.KIND, UnitSection.KIND);

    private LayoutSections() {}

    /** The kind named {@code name} that reads section version {@code version}, or null. */
    static SectionKind<?> find(String name, int version) {
        for (SectionKind<?> k : KINDS) {
            SectionKind.Info i = k.info();
            if (i.name().equals(name) && version >= i.minVersion() && version <= i.version()) {
                return k;
            }
        }
        return null;
    }

    /** What a reader accepts, for refusals: {@code 'clusters' 2..4, 'groups' 1, 'units' 1 (once)}. */
    static String allowed() {
        StringBuilder sb = new StringBuilder();
        for (SectionKind<?> k : KINDS) {
            SectionKind.Info i = k.info();
            sb.append(sb.isEmpty() ? "" : ", ").append('\'').append(i.name()).append("' ")
                    .append(i.minVersion() == i.version() ? String.valueOf(i.version()) : i.minVersion() + ".." + i.version());
        }
        return sb.append(" (once)").toString();
    }

    /** The per-layer slots, for refusals: {@code a cluster or a group layout, and a unit layout}. */
    static String slots() {
        StringBuilder sb = new StringBuilder();
        for (SectionKind.Slot s : SectionKind.Slot.values()) {
            StringBuilder one = new StringBuilder();
            for (SectionKind<?> k : KINDS) {
                if (k.info().slot() == s) {
                    one.append(one.isEmpty() ? "a " : " or a ").append(k.info().noun());
                }
            }
            sb.append(sb.isEmpty() ? "" : ", and ").append(one).append(" layout");
        }
        return sb.toString();
    }

    /** A manifest from decoded parts, {@code layouts} holding one per-layer array per kind of {@link #KINDS}. */
    static Manifest manifest(String id, KvShape shape, int blockTokens, List<String> deviceUuids, int[] tokenIds,
            BlockTable[] tables, SegmentedLayout[][] layouts, long commitMillis, long commitNumber,
            boolean identityChecksums) {
        return new Manifest(id, shape, blockTokens, deviceUuids, tokenIds, tables,
                typed(layouts, ClusterSection.KIND, ClusterLayout[].class), typed(layouts, GroupSection.KIND,
                        GroupLayout[].class), typed(layouts, UnitSection.KIND, UnitLayout[].class), commitMillis,
                commitNumber, identityChecksums);
    }

    private static <L extends SegmentedLayout> L[] typed(SegmentedLayout[][] layouts, SectionKind<L> kind,
            Class<L[]> type) {
        SegmentedLayout[] of = layouts[KINDS.indexOf(kind)];
        return Arrays.copyOf(of, of.length, type);
    }
}
