package io.kvoffload.internal.storage;

import io.kvoffload.KvShape;
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
            if (k.name().equals(name) && version >= k.minVersion() && version <= k.version()) {
                return k;
            }
        }
        return null;
    }

    /** What a reader accepts, for refusals: {@code 'clusters' 2..4, 'groups' 1, 'units' 1 (once)}. */
    static String allowed() {
        StringBuilder sb = new StringBuilder();
        for (SectionKind<?> k : KINDS) {
            sb.append(sb.isEmpty() ? "" : ", ").append('\'').append(k.name()).append("' ").append(k.minVersion() == k.version()
                    ? String.valueOf(k.version()) : k.minVersion() + ".." + k.version());
        }
        return sb.append(" (once)").toString();
    }

    /** The per-layer slots, for refusals: {@code a cluster or a group layout, and a unit layout}. */
    static String slots() {
        StringBuilder sb = new StringBuilder();
        for (SectionKind.Slot s : SectionKind.Slot.values()) {
            StringBuilder one = new StringBuilder();
            for (SectionKind<?> k : KINDS) {
                if (k.slot() == s) {
                    one.append(one.isEmpty() ? "a " : " or a ").append(k.noun());
                }
            }
            sb.append(sb.isEmpty() ? "" : ", and ").append(one).append(" layout");
        }
        return sb.toString();
    }

    /** A manifest from decoded parts, {@code layouts} holding one per-layer array per kind of {@link #KINDS}. */
    static Manifest manifest(String id, KvShape shape, int blockTokens, List<String> deviceUuids, int[] tokenIds,
            BlockTable[] tables, Object[][] layouts, long commitMillis, long commitNumber, boolean identityChecksums) {
        return new Manifest(id, shape, blockTokens, deviceUuids, tokenIds, tables, (ClusterLayout[]) layouts[0],
                (GroupLayout[]) layouts[1], (UnitLayout[]) layouts[2], commitMillis, commitNumber, identityChecksums);
    }
}
