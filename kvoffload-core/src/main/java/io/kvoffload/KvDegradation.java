package io.kvoffload;

/**
 * Something the engine does that costs speed or availability without failing a call — what a
 * WARN or ERROR log line says, for an engine that has no SLF4J provider or wants to react
 * ({@link KvEngine#addDegradationListener}). Each is also a JFR event ({@code io.kvoffload.Degradation}).
 *
 * @param kind what happened
 * @param sequenceId the sequence concerned, or null
 * @param layer the layer concerned, or -1
 * @param message what the log line says: what, where and what to do
 */
public record KvDegradation(Kind kind, String sequenceId, int layer, String message) {

    /** What degraded. */
    public enum Kind {
        /**
         * A decoder opened a layer no strategy laid out: every token of it stays in DRAM and is
         * attended, so the step costs DRAM and compute in proportion to the context (lay the layer
         * out with {@code SelectionStrategy.layOut} or its strategy's offline phase). Also counted in {@link DecodeStats#unclusteredLayers()}.
         */
        UNCLUSTERED_LAYER,
        /**
         * At open, a sequence's newest manifest copies did not verify and an older commit was used; or
         * copies of a deleted sequence that a device away at the deletion kept were ignored.
         */
        MANIFEST_IGNORED,
        /** At open, no copy of a sequence's manifest could be used: it is quarantined ({@link KvStats#quarantine()}). */
        MANIFEST_QUARANTINED,
        /** At open, a device of the store is missing or unusable ({@link KvStats#unavailableDevices()}). */
        DEVICE_UNAVAILABLE,
        /** A device failed while in use; it serves nothing more until the engine is reopened. */
        DEVICE_FAILED
    }
}
