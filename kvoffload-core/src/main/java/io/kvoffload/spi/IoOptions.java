package io.kvoffload.spi;

/**
 * Tuning a backend receives when it is opened.
 *
 * @param directIo ask for O_DIRECT (a backend that cannot use it logs why and falls back)
 * @param queueDepth the most requests a backend keeps in flight per device
 * @param threadsPerDevice worker threads per device, for backends that block in system calls
 */
public record IoOptions(boolean directIo, int queueDepth, int threadsPerDevice) {}
