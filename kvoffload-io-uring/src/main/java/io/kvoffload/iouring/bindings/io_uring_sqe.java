package io.kvoffload.iouring.bindings;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;
import java.lang.foreign.ValueLayout;

/**
 * {@code struct io_uring_sqe}: one submission queue entry, 64 bytes.
 *
 * <p>Mirrors <a href="https://github.com/axboe/liburing/blob/liburing-2.3/src/include/liburing/io_uring.h#L31-L99">
 * liburing/io_uring.h lines 31-99</a> at liburing-2.3. Anonymous unions carry jextract's
 * {@code $anon$line:column} names; their members are reached through flattened accessors as jextract
 * does. Only the members the backend uses have accessors; the layout covers the whole struct.
 */
@SuppressWarnings({"unused", "checkstyle:TypeName"})
public final class io_uring_sqe {
    private io_uring_sqe() {}

    private static final GroupLayout $LAYOUT = MemoryLayout.structLayout(
                    liburing_h.C_CHAR.withName("opcode"),
                    liburing_h.C_CHAR.withName("flags"),
                    liburing_h.C_SHORT.withName("ioprio"),
                    liburing_h.C_INT.withName("fd"),
                    MemoryLayout.unionLayout(
                                    liburing_h.C_LONG_LONG.withName("off"),
                                    liburing_h.C_LONG_LONG.withName("addr2"),
                                    MemoryLayout.structLayout(
                                                    liburing_h.C_INT.withName("cmd_op"),
                                                    liburing_h.C_INT.withName("__pad1"))
                                            .withName("$anon$39:3"))
                            .withName("$anon$36:2"),
                    MemoryLayout.unionLayout(
                                    liburing_h.C_LONG_LONG.withName("addr"),
                                    liburing_h.C_LONG_LONG.withName("splice_off_in"))
                            .withName("$anon$44:2"),
                    liburing_h.C_INT.withName("len"),
                    MemoryLayout.unionLayout(
                                    liburing_h.C_INT.withName("rw_flags"),
                                    liburing_h.C_INT.withName("fsync_flags"),
                                    liburing_h.C_SHORT.withName("poll_events"),
                                    liburing_h.C_INT.withName("poll32_events"),
                                    liburing_h.C_INT.withName("msg_flags"),
                                    liburing_h.C_INT.withName("uring_cmd_flags"))
                            .withName("$anon$49:2"),
                    liburing_h.C_LONG_LONG.withName("user_data"),
                    // __attribute__((packed)) union: alignment 1 in C.
                    MemoryLayout.unionLayout(
                                    liburing_h.C_SHORT.withByteAlignment(1).withName("buf_index"),
                                    liburing_h.C_SHORT.withByteAlignment(1).withName("buf_group"))
                            .withName("$anon$72:2"),
                    liburing_h.C_SHORT.withName("personality"),
                    MemoryLayout.unionLayout(
                                    liburing_h.C_INT.withName("splice_fd_in"),
                                    liburing_h.C_INT.withName("file_index"),
                                    MemoryLayout.structLayout(
                                                    liburing_h.C_SHORT.withName("addr_len"),
                                                    MemoryLayout.sequenceLayout(1, liburing_h.C_SHORT)
                                                            .withName("__pad3"))
                                            .withName("$anon$83:3"))
                            .withName("$anon$80:2"),
                    MemoryLayout.unionLayout(
                                    MemoryLayout.structLayout(
                                                    liburing_h.C_LONG_LONG.withName("addr3"),
                                                    MemoryLayout.sequenceLayout(1, liburing_h.C_LONG_LONG)
                                                            .withName("__pad2"))
                                            .withName("$anon$89:3"),
                                    MemoryLayout.sequenceLayout(0, liburing_h.C_CHAR).withName("cmd"))
                            .withName("$anon$88:2"))
            .withName("io_uring_sqe");

    public static GroupLayout layout() {
        return $LAYOUT;
    }

    public static long sizeof() {
        return $LAYOUT.byteSize();
    }

    private static final ValueLayout.OfByte opcode$LAYOUT =
            (ValueLayout.OfByte) $LAYOUT.select(groupElement("opcode"));
    private static final long opcode$OFFSET = 0;

    public static ValueLayout.OfByte opcode$layout() {
        return opcode$LAYOUT;
    }

    public static long opcode$offset() {
        return opcode$OFFSET;
    }

    public static byte opcode(MemorySegment struct) {
        return struct.get(opcode$LAYOUT, opcode$OFFSET);
    }

    public static void opcode(MemorySegment struct, byte fieldValue) {
        struct.set(opcode$LAYOUT, opcode$OFFSET, fieldValue);
    }

    private static final ValueLayout.OfByte flags$LAYOUT =
            (ValueLayout.OfByte) $LAYOUT.select(groupElement("flags"));
    private static final long flags$OFFSET = 1;

    public static long flags$offset() {
        return flags$OFFSET;
    }

    public static byte flags(MemorySegment struct) {
        return struct.get(flags$LAYOUT, flags$OFFSET);
    }

    public static void flags(MemorySegment struct, byte fieldValue) {
        struct.set(flags$LAYOUT, flags$OFFSET, fieldValue);
    }

    private static final ValueLayout.OfShort ioprio$LAYOUT =
            (ValueLayout.OfShort) $LAYOUT.select(groupElement("ioprio"));
    private static final long ioprio$OFFSET = 2;

    public static long ioprio$offset() {
        return ioprio$OFFSET;
    }

    public static short ioprio(MemorySegment struct) {
        return struct.get(ioprio$LAYOUT, ioprio$OFFSET);
    }

    public static void ioprio(MemorySegment struct, short fieldValue) {
        struct.set(ioprio$LAYOUT, ioprio$OFFSET, fieldValue);
    }

    private static final ValueLayout.OfInt fd$LAYOUT = (ValueLayout.OfInt) $LAYOUT.select(groupElement("fd"));
    private static final long fd$OFFSET = 4;

    public static long fd$offset() {
        return fd$OFFSET;
    }

    public static int fd(MemorySegment struct) {
        return struct.get(fd$LAYOUT, fd$OFFSET);
    }

    public static void fd(MemorySegment struct, int fieldValue) {
        struct.set(fd$LAYOUT, fd$OFFSET, fieldValue);
    }

    private static final ValueLayout.OfLong off$LAYOUT =
            (ValueLayout.OfLong) $LAYOUT.select(groupElement("$anon$36:2"), groupElement("off"));
    private static final long off$OFFSET = 8;

    public static long off$offset() {
        return off$OFFSET;
    }

    public static long off(MemorySegment struct) {
        return struct.get(off$LAYOUT, off$OFFSET);
    }

    public static void off(MemorySegment struct, long fieldValue) {
        struct.set(off$LAYOUT, off$OFFSET, fieldValue);
    }

    private static final ValueLayout.OfLong addr$LAYOUT =
            (ValueLayout.OfLong) $LAYOUT.select(groupElement("$anon$44:2"), groupElement("addr"));
    private static final long addr$OFFSET = 16;

    public static long addr$offset() {
        return addr$OFFSET;
    }

    public static long addr(MemorySegment struct) {
        return struct.get(addr$LAYOUT, addr$OFFSET);
    }

    public static void addr(MemorySegment struct, long fieldValue) {
        struct.set(addr$LAYOUT, addr$OFFSET, fieldValue);
    }

    private static final ValueLayout.OfInt len$LAYOUT = (ValueLayout.OfInt) $LAYOUT.select(groupElement("len"));
    private static final long len$OFFSET = 24;

    public static long len$offset() {
        return len$OFFSET;
    }

    public static int len(MemorySegment struct) {
        return struct.get(len$LAYOUT, len$OFFSET);
    }

    public static void len(MemorySegment struct, int fieldValue) {
        struct.set(len$LAYOUT, len$OFFSET, fieldValue);
    }

    private static final ValueLayout.OfInt rw_flags$LAYOUT =
            (ValueLayout.OfInt) $LAYOUT.select(groupElement("$anon$49:2"), groupElement("rw_flags"));
    private static final long rw_flags$OFFSET = 28;

    public static long rw_flags$offset() {
        return rw_flags$OFFSET;
    }

    public static int rw_flags(MemorySegment struct) {
        return struct.get(rw_flags$LAYOUT, rw_flags$OFFSET);
    }

    public static void rw_flags(MemorySegment struct, int fieldValue) {
        struct.set(rw_flags$LAYOUT, rw_flags$OFFSET, fieldValue);
    }

    private static final ValueLayout.OfLong user_data$LAYOUT =
            (ValueLayout.OfLong) $LAYOUT.select(groupElement("user_data"));
    private static final long user_data$OFFSET = 32;

    public static long user_data$offset() {
        return user_data$OFFSET;
    }

    public static long user_data(MemorySegment struct) {
        return struct.get(user_data$LAYOUT, user_data$OFFSET);
    }

    public static void user_data(MemorySegment struct, long fieldValue) {
        struct.set(user_data$LAYOUT, user_data$OFFSET, fieldValue);
    }

    private static final ValueLayout.OfShort buf_index$LAYOUT =
            (ValueLayout.OfShort) $LAYOUT.select(groupElement("$anon$72:2"), groupElement("buf_index"));
    private static final long buf_index$OFFSET = 40;

    public static long buf_index$offset() {
        return buf_index$OFFSET;
    }

    public static short buf_index(MemorySegment struct) {
        return struct.get(buf_index$LAYOUT, buf_index$OFFSET);
    }

    public static void buf_index(MemorySegment struct, short fieldValue) {
        struct.set(buf_index$LAYOUT, buf_index$OFFSET, fieldValue);
    }

    private static final ValueLayout.OfShort personality$LAYOUT =
            (ValueLayout.OfShort) $LAYOUT.select(groupElement("personality"));
    private static final long personality$OFFSET = 42;

    public static long personality$offset() {
        return personality$OFFSET;
    }

    public static short personality(MemorySegment struct) {
        return struct.get(personality$LAYOUT, personality$OFFSET);
    }

    public static void personality(MemorySegment struct, short fieldValue) {
        struct.set(personality$LAYOUT, personality$OFFSET, fieldValue);
    }

    private static final ValueLayout.OfInt file_index$LAYOUT =
            (ValueLayout.OfInt) $LAYOUT.select(groupElement("$anon$80:2"), groupElement("file_index"));
    private static final long file_index$OFFSET = 44;

    public static long file_index$offset() {
        return file_index$OFFSET;
    }

    public static int file_index(MemorySegment struct) {
        return struct.get(file_index$LAYOUT, file_index$OFFSET);
    }

    public static void file_index(MemorySegment struct, int fieldValue) {
        struct.set(file_index$LAYOUT, file_index$OFFSET, fieldValue);
    }

    private static final ValueLayout.OfLong addr3$LAYOUT = (ValueLayout.OfLong)
            $LAYOUT.select(groupElement("$anon$88:2"), groupElement("$anon$89:3"), groupElement("addr3"));
    private static final long addr3$OFFSET = 48;

    public static long addr3$offset() {
        return addr3$OFFSET;
    }

    public static long addr3(MemorySegment struct) {
        return struct.get(addr3$LAYOUT, addr3$OFFSET);
    }

    public static void addr3(MemorySegment struct, long fieldValue) {
        struct.set(addr3$LAYOUT, addr3$OFFSET, fieldValue);
    }

    private static final long __pad2$OFFSET = 56;

    /** Offset of {@code __pad2[0]}, which io_uring_prep_rw clears. */
    public static long __pad2$offset() {
        return __pad2$OFFSET;
    }

    /** The element at {@code index} of an array of sqes (the mapped SQE array), as a slice. */
    public static MemorySegment asSlice(MemorySegment array, long index) {
        return array.asSlice(index * sizeof(), sizeof());
    }

    public static MemorySegment allocate(SegmentAllocator allocator) {
        return allocator.allocate($LAYOUT);
    }
}
