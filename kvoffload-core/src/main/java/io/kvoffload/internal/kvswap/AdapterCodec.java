package io.kvoffload.internal.kvswap;

import io.kvoffload.KvShape;
import io.kvoffload.internal.storage.GroupState;

/** Reads KVSwap's low-rank K adapter, the state of its group layouts, back from a manifest. */
public final class AdapterCodec implements GroupState.Codec {
    @Override
    public String name() {
        return "adapter";
    }

    @Override
    public GroupState decode(byte[] bytes, KvShape shape) {
        LowRankAdapter adapter = LowRankAdapter.decode(bytes);
        if (adapter.kvHeads() != shape.kvHeads() || adapter.headDim() != shape.headDim()) {
            throw new IllegalArgumentException("adapter is for kvHeads " + adapter.kvHeads() + " × headDim "
                    + adapter.headDim() + "; allowed: the shape's " + shape.kvHeads() + " × " + shape.headDim());
        }
        return adapter;
    }
}
