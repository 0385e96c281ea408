/**
 * The engine's side of the shared remote tier (docs/remote.md): the key scheme, the framing that
 * checksums every blob, the asynchronous publisher of committed blocks and the fetch that pulls a
 * remote prefix into the local store. The tier itself is behind {@link io.kvoffload.spi.RemoteTier}.
 */
package io.kvoffload.internal.remote;
