/**
 * The GPU (HBM) tier over CUDA through JCuda: page-locked DRAM slabs, SwiftCache's layer stream
 * buffer (double-buffered, filled from the decoder's {@link io.kvoffload.KvView}s by asynchronous
 * copies ordered with events), and the HBM hot cache (cost-effectiveness policy over a
 * block-major pool that resizes without moving blocks).
 * Only {@link io.kvoffload.cuda.bindings} touches raw addresses.
 */
package io.kvoffload.cuda;
