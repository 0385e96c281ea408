/**
 * The roles behind a {@link io.kvoffload.KvSequence} handle, each in one class: the per-layer
 * extent ledger ({@link io.kvoffload.internal.sequence.ExtentLedger}, one
 * {@link io.kvoffload.internal.sequence.LayerState} per layer), the block writer, the commit
 * protocol, the reader with its checksum verification, the KVSwap offline phase
 * ({@link io.kvoffload.internal.sequence.GroupLayouts}) and the handle's lifecycle. Not exported:
 * only {@code io.kvoffload} uses it.
 */
package io.kvoffload.internal.sequence;
