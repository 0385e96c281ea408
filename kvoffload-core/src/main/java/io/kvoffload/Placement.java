package io.kvoffload;

/**
 * How a strategy's layout (the default positional pages, Swarm's clusters) spreads a layer's
 * entries over the SSDs; a property of the engine ({@link KvConfig.Builder#placement}), the same for
 * every strategy, recorded per layer in the manifest so a sequence is read as it was written.
 */
public enum Placement {
    /**
     * An entry (one token's K and V of all KV heads) is stored whole on one device; a unit's tokens
     * go round robin over the devices (Swarm Eq. 7), and the bucket scheduler balances a fetch's
     * reads by choosing among copies. The default.
     */
    TOKEN_STRIPED,
    /**
     * Head sharding after InstInfer ("Scale to CSD array"): the KV heads are cut into {@code S}
     * equal head groups, {@code S} the largest divisor of the KV head count not above the device
     * count, and every unit stores each head group's K and V of its tokens on its own device. A
     * fetch reads the selected tokens' heads from every device at once, each device serving whole
     * heads; the gather reassembles the token-major entries. Each head group of each token carries
     * its own checksum.
     */
    HEAD_SHARDED
}
