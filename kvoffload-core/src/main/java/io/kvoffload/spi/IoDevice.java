package io.kvoffload.spi;

import java.nio.file.Path;

/**
 * One SSD as the I/O layer sees it: a preallocated pool file that the engine created.
 *
 * @param index position in the engine's device list; requests name devices by index
 * @param poolFile the pool file to open (with O_DIRECT where the file system allows)
 * @param sizeBytes size of the pool file; no request may reach past it
 * @param alignment direct-I/O alignment in bytes (a power of two): offsets, lengths and buffer
 *     addresses are multiples of it
 */
public record IoDevice(int index, Path poolFile, long sizeBytes, int alignment) {}
