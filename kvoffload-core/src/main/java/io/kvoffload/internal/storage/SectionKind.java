package io.kvoffload.internal.storage;

import io.kvoffload.KvShape;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * One kind of strategy layout section a manifest layer may hold: its name, the versions this build
 * reads, its writer and its reader, the way a Lucene codec names and versions each of its formats.
 * Each layout contributes its kind ({@link ClusterSection#KIND}, {@link GroupSection#KIND},
 * {@link UnitSection#KIND}) to {@link LayoutSections}; {@link ManifestCodec} frames, orders and
 * checks sections through this interface and names no strategy.
 *
 * @param <L> the layout this section stores
 */
interface SectionKind<L extends SegmentedLayout> {

    /**
     * Which layouts exclude one another on a layer: a layer holds at most one section per slot (one
     * layout of its entries, clusters or groups, and one auxiliary layout beside it).
     */
    enum Slot { ENTRIES, AUXILIARY }

    /** Where a section body is read: the layer and what the manifest says before the sections. */
    record Context(int layer, KvShape shape, int tokens, int devices) {}

    /** The section's name in a version-6 manifest. */
    String name();

    /** The layout's noun in messages ("cluster", "group", "unit"). */
    String noun();

    Slot slot();

    /** The oldest section version this build reads. */
    int minVersion();

    /** The newest section version this build reads and writes. */
    int version();

    /** The section version {@code layout} is written in: by default {@link #version()}. */
    default int versionFor(L layout) {
        return version();
    }

    /**
     * The first manifest version (2..5) whose per-layer flag format (before named sections) carries
     * this kind, or 0 for a kind that only exists as a named section (manifest version 6 on).
     */
    int flaggedSince();

    /** The section version of this kind's bodies in the flag format of {@code manifestVersion}. */
    default int flaggedVersion(int manifestVersion) {
        return version();
    }

    /** The manifest's layouts of this kind, one per layer (null where a layer has none). */
    L[] layouts(Manifest m);

    /** An empty per-layer array for decoding. */
    L[] newArray(int layers);

    void write(DataOutputStream out, L layout, int version) throws IOException;

    /** Reads one body of section version {@code version}; every count is checked against the bytes left. */
    L read(ByteBuffer body, Context at, int version);

    /** Tokens {@code [0, n)} of the layer that {@code layout} holds instead of its blocks; 0 for none. */
    default int relaidTokens(L layout) {
        return 0;
    }

    /** The byte stride of {@code layout}'s units that device alignment applies to; 0 for none. */
    default int stride(L layout) {
        return 0;
    }

    /** What names {@code layout} in a refusal (a unit layout's owner, for one); empty for nothing. */
    default String label(L layout) {
        return "";
    }
}
