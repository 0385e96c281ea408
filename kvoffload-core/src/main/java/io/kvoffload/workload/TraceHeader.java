package io.kvoffload.workload;

import io.kvoffload.DType;
import io.kvoffload.internal.util.Checks;

/**
 * The fixed 64-byte header of a trace file and the sizes it implies. The format
 * (little-endian throughout; docs/swarm-offline.md has a Python writer):
 *
 * <pre>
 * offset  size  field
 *      0     8  magic "KVOTRACE" (ASCII)
 *      8     4  version = 1
 *     12     4  layers            1..4096
 *     16     4  queryHeads        a positive multiple of kvHeads
 *     20     4  kvHeads           1..1024
 *     24     4  headDim           1..16384
 *     28     4  tokens            1..2^31−1 (keys per layer)
 *     32     4  queriesPerLayer   0..2^24
 *     36     4  dtype             0 = F32, 1 = F16, 2 = BF16
 *     40     4  flags             bit 0: values present
 *     44    20  zero
 *     64        layer 0, layer 1, ... each:
 *                 K  [kvHeads][tokens][headDim]
 *                 V  [kvHeads][tokens][headDim]        (only if flags bit 0)
 *                 Q  [queriesPerLayer][queryHeads][headDim]
 * </pre>
 *
 * K and V are head-major, exactly PyTorch's {@code [batch=1, kvHeads, seq, headDim]} cache tensors;
 * keys and queries are post-RoPE, as the attention kernel sees them. The file size must equal
 * {@link #fileBytes()}.
 *
 * @param queriesPerLayer queries stored for each layer (0 for a keys-only trace)
 * @param values whether V is stored
 */
public record TraceHeader(int layers, int queryHeads, int kvHeads, int headDim, int tokens, int queriesPerLayer,
        DType dtype, boolean values) {

    /** Bytes of the header. */
    public static final int BYTES = 64;
    /** The magic at offset 0. */
    public static final String MAGIC = "KVOTRACE";
    /** The format version this library reads and writes. */
    public static final int VERSION = 1;

    public TraceHeader {
        Checks.inRange("layers", layers, 1, 4096);
        Checks.inRange("kvHeads", kvHeads, 1, 1024);
        Checks.inRange("headDim", headDim, 1, 16384);
        Checks.inRange("tokens", tokens, 1, Integer.MAX_VALUE);
        Checks.inRange("queriesPerLayer", queriesPerLayer, 0, 1 << 24);
        Checks.notNull("dtype", dtype);
        Checks.queryHeads(queryHeads, kvHeads);
    }

    /** Bytes of one K (or V) block of a layer. */
    public long kvBlockBytes() {
        return Math.multiplyExact(Math.multiplyExact((long) kvHeads * headDim, (long) tokens), (long) dtype.bytes());
    }

    /** Bytes of one stored query. */
    public long queryBytes() {
        return (long) queryHeads * headDim * dtype.bytes();
    }

    /** Bytes of one layer's block. */
    public long layerBytes() {
        return Math.addExact(Math.multiplyExact(kvBlockBytes(), values ? 2L : 1L),
                Math.multiplyExact(queryBytes(), (long) queriesPerLayer));
    }

    /** Offset of layer {@code l}'s block. */
    public long layerOffset(int layer) {
        Checks.index("layer", layer, layers);
        return Math.addExact(BYTES, Math.multiplyExact(layerBytes(), (long) layer));
    }

    /** Size the whole file must have. */
    public long fileBytes() {
        return Math.addExact(BYTES, Math.multiplyExact(layerBytes(), (long) layers));
    }

    static int dtypeCode(DType d) {
        return switch (d) {
            case F32 -> 0;
            case F16 -> 1;
            case BF16 -> 2;
        };
    }

    static DType dtypeOf(int code) {
        return switch (code) {
            case 0 -> DType.F32;
            case 1 -> DType.F16;
            case 2 -> DType.BF16;
            default -> throw new IllegalArgumentException("dtype code = " + code + " is out of range; allowed: 0..2 (F32, F16, BF16)");
        };
    }
}
