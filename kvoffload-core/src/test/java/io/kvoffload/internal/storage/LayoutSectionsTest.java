package io.kvoffload.internal.storage;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The registry of layout section kinds that {@link ManifestCodec} frames sections through. */
class LayoutSectionsTest {

    @Test
    void everyKindHasItsOwnNameAndIsFoundByNameAndVersion() {
        Set<String> names = new HashSet<>();
        for (SectionKind<?> k : LayoutSections.KINDS) {
            assertTrue(names.add(k.info().name()), "a second kind named " + k.info().name());
            assertSame(k, LayoutSections.find(k.info().name(), k.info().minVersion()));
            assertSame(k, LayoutSections.find(k.info().name(), k.info().version()));
            assertNull(LayoutSections.find(k.info().name(), k.info().version() + 1), "a newer version than the build reads");
            assertNull(LayoutSections.find(k.info().name(), k.info().minVersion() - 1), "an older version than the build reads");
        }
        assertNull(LayoutSections.find("cluxters", 3));
    }

    @Test
    void refusalsListTheRegisteredKindsAndSlots() {
        assertEquals("'clusters' 2..4, 'groups' 1..2, 'units' 1..2 (once)", LayoutSections.allowed());
        assertEquals("a cluster or a group layout, and a unit layout", LayoutSections.slots());
    }

    /** The flag format of manifest versions 2 to 5 is fixed: clusters from 2 (body 2, then 3), groups from 4, no units. */
    @Test
    void theFlagFormatOfOldManifestsIsDescribedByTheKinds() {
        assertEquals(2, ClusterSection.KIND.info().flaggedSince());
        assertEquals(2, ClusterSection.KIND.flaggedVersion(2));
        for (int v = 3; v <= 5; v++) {
            assertEquals(3, ClusterSection.KIND.flaggedVersion(v));
        }
        assertEquals(4, GroupSection.KIND.info().flaggedSince());
        assertEquals(0, UnitSection.KIND.info().flaggedSince());
    }
}
