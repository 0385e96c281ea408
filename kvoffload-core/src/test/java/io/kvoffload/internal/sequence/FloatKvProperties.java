package io.kvoffload.internal.sequence;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.kvoffload.DType;
import io.kvoffload.internal.util.ElementCodec;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/** The appendKv conversion gives, bit for bit, what the reference codec gives, for every float. */
class FloatKvProperties {
    @Provide
    Arbitrary<Float> anyFloat() {
        // Every bit pattern (NaNs with payloads, subnormals, infinities) plus the edge values, often.
        return Arbitraries.oneOf(Arbitraries.integers().map(Float::intBitsToFloat),
                Arbitraries.of(Float.NaN, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY, -0f, 0f, Float.MAX_VALUE,
                        -Float.MAX_VALUE, Float.MIN_VALUE, Float.MIN_NORMAL, 65504f, 65520f, 1f + 0x1p-8f, 1f + 0x1p-9f));
    }

    @Property(tries = 3000)
    void bf16MatchesTheReferenceCodec(@ForAll("anyFloat") float f) {
        short[] out = new short[1];
        FloatKv.convert(DType.BF16, new float[] {f}, 0, out, 1);
        assertEquals(ElementCodec.toBf16(f), out[0], () -> Float.toHexString(f));
    }

    @Property(tries = 1000)
    void f16MatchesTheJdk(@ForAll("anyFloat") float f) {
        short[] out = new short[1];
        FloatKv.convert(DType.F16, new float[] {f}, 0, out, 1);
        assertEquals(Float.floatToFloat16(f), out[0], () -> Float.toHexString(f));
    }
}
