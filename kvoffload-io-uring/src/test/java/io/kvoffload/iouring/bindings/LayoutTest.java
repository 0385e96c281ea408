package io.kvoffload.iouring.bindings;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.iouring.IoUringTestSupport;
import java.io.IOException;
import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The hand-written bindings against the C compiler's view of {@code <liburing.h>}: a C program
 * prints {@code sizeof}/{@code offsetof} of every mirrored struct member and the value of every
 * mirrored constant, and each must equal the Java constant. Needs gcc and liburing-dev; skips
 * without them, fails instead when {@code KVO_REQUIRE_IO_URING=1}.
 *
 * <p>Also checks, without a compiler, that each struct's {@code MemoryLayout} puts every member at
 * the literal offset its accessors use.
 */
class LayoutTest {
    @TempDir
    Path dir;

    /** C expression → value the Java side uses. */
    private static Map<String, Long> expectations() {
        Map<String, Long> m = new LinkedHashMap<>();
        m.put("sizeof(struct io_uring_sqe)", io_uring_sqe.sizeof());
        m.put("offsetof(struct io_uring_sqe, opcode)", io_uring_sqe.opcode$offset());
        m.put("offsetof(struct io_uring_sqe, flags)", io_uring_sqe.flags$offset());
        m.put("offsetof(struct io_uring_sqe, ioprio)", io_uring_sqe.ioprio$offset());
        m.put("offsetof(struct io_uring_sqe, fd)", io_uring_sqe.fd$offset());
        m.put("offsetof(struct io_uring_sqe, off)", io_uring_sqe.off$offset());
        m.put("offsetof(struct io_uring_sqe, addr)", io_uring_sqe.addr$offset());
        m.put("offsetof(struct io_uring_sqe, len)", io_uring_sqe.len$offset());
        m.put("offsetof(struct io_uring_sqe, rw_flags)", io_uring_sqe.rw_flags$offset());
        m.put("offsetof(struct io_uring_sqe, user_data)", io_uring_sqe.user_data$offset());
        m.put("offsetof(struct io_uring_sqe, buf_index)", io_uring_sqe.buf_index$offset());
        m.put("offsetof(struct io_uring_sqe, personality)", io_uring_sqe.personality$offset());
        m.put("offsetof(struct io_uring_sqe, file_index)", io_uring_sqe.file_index$offset());
        m.put("offsetof(struct io_uring_sqe, addr3)", io_uring_sqe.addr3$offset());
        m.put("offsetof(struct io_uring_sqe, __pad2)", io_uring_sqe.__pad2$offset());

        m.put("sizeof(struct io_uring_cqe)", io_uring_cqe.sizeof());
        m.put("offsetof(struct io_uring_cqe, user_data)", io_uring_cqe.user_data$offset());
        m.put("offsetof(struct io_uring_cqe, res)", io_uring_cqe.res$offset());
        m.put("offsetof(struct io_uring_cqe, flags)", io_uring_cqe.flags$offset());
        m.put("offsetof(struct io_uring_cqe, big_cqe)", io_uring_cqe.big_cqe$offset());

        // The structs mirrored whole: every member their Java layout names.
        for (Class<?> c : STRUCTS) {
            String struct = "struct " + c.getSimpleName();
            GroupLayout layout = layout(c);
            m.put("sizeof(" + struct + ")", layout.byteSize());
            for (String f : memberNames(layout)) {
                m.put("offsetof(" + struct + ", " + f + ")", invoke(c, f));
            }
        }

        m.put("IORING_OP_NOP", (long) liburing_h.IORING_OP_NOP);
        m.put("IORING_OP_READV", (long) liburing_h.IORING_OP_READV);
        m.put("IORING_OP_WRITEV", (long) liburing_h.IORING_OP_WRITEV);
        m.put("IORING_OP_FSYNC", (long) liburing_h.IORING_OP_FSYNC);
        m.put("IORING_OP_READ_FIXED", (long) liburing_h.IORING_OP_READ_FIXED);
        m.put("IORING_OP_WRITE_FIXED", (long) liburing_h.IORING_OP_WRITE_FIXED);
        m.put("IORING_OP_READ", (long) liburing_h.IORING_OP_READ);
        m.put("IORING_OP_WRITE", (long) liburing_h.IORING_OP_WRITE);
        m.put("IOSQE_FIXED_FILE", (long) liburing_h.IOSQE_FIXED_FILE);
        m.put("IOSQE_IO_DRAIN", (long) liburing_h.IOSQE_IO_DRAIN);
        m.put("IOSQE_IO_LINK", (long) liburing_h.IOSQE_IO_LINK);
        m.put("IOSQE_ASYNC", (long) liburing_h.IOSQE_ASYNC);
        m.put("IORING_SETUP_IOPOLL", (long) liburing_h.IORING_SETUP_IOPOLL);
        m.put("IORING_SETUP_SQPOLL", (long) liburing_h.IORING_SETUP_SQPOLL);
        m.put("IORING_SETUP_CQSIZE", (long) liburing_h.IORING_SETUP_CQSIZE);
        m.put("IORING_SETUP_CLAMP", (long) liburing_h.IORING_SETUP_CLAMP);
        m.put("IORING_SETUP_SUBMIT_ALL", (long) liburing_h.IORING_SETUP_SUBMIT_ALL);
        m.put("IORING_SETUP_COOP_TASKRUN", (long) liburing_h.IORING_SETUP_COOP_TASKRUN);
        m.put("IORING_SETUP_TASKRUN_FLAG", (long) liburing_h.IORING_SETUP_TASKRUN_FLAG);
        m.put("IORING_SETUP_SQE128", (long) liburing_h.IORING_SETUP_SQE128);
        m.put("IORING_SETUP_CQE32", (long) liburing_h.IORING_SETUP_CQE32);
        m.put("IORING_SETUP_SINGLE_ISSUER", (long) liburing_h.IORING_SETUP_SINGLE_ISSUER);
        m.put("IORING_SETUP_DEFER_TASKRUN", (long) liburing_h.IORING_SETUP_DEFER_TASKRUN);
        m.put("IORING_SQ_NEED_WAKEUP", (long) liburing_h.IORING_SQ_NEED_WAKEUP);
        m.put("IORING_SQ_CQ_OVERFLOW", (long) liburing_h.IORING_SQ_CQ_OVERFLOW);
        m.put("IORING_SQ_TASKRUN", (long) liburing_h.IORING_SQ_TASKRUN);
        m.put("IORING_FEAT_SINGLE_MMAP", (long) liburing_h.IORING_FEAT_SINGLE_MMAP);
        m.put("IORING_FEAT_NODROP", (long) liburing_h.IORING_FEAT_NODROP);
        m.put("IORING_FEAT_SUBMIT_STABLE", (long) liburing_h.IORING_FEAT_SUBMIT_STABLE);
        m.put("IORING_FEAT_RW_CUR_POS", (long) liburing_h.IORING_FEAT_RW_CUR_POS);
        m.put("IORING_FEAT_EXT_ARG", (long) liburing_h.IORING_FEAT_EXT_ARG);
        m.put("IORING_FEAT_NATIVE_WORKERS", (long) liburing_h.IORING_FEAT_NATIVE_WORKERS);
        m.put("IORING_FEAT_RSRC_TAGS", (long) liburing_h.IORING_FEAT_RSRC_TAGS);
        m.put("O_RDONLY", (long) libc_h.O_RDONLY);
        m.put("O_WRONLY", (long) libc_h.O_WRONLY);
        m.put("O_RDWR", (long) libc_h.O_RDWR);
        m.put("O_DIRECT", (long) libc_h.O_DIRECT);
        m.put("O_CLOEXEC", (long) libc_h.O_CLOEXEC);
        m.put("RLIMIT_MEMLOCK", (long) libc_h.RLIMIT_MEMLOCK);
        for (String e : List.of("EPERM", "ENOENT", "EINTR", "EIO", "EBADF", "EAGAIN", "ENOMEM", "EFAULT", "EBUSY",
                "EINVAL", "ENOSPC", "ENOSYS", "EOPNOTSUPP", "EOVERFLOW", "ECANCELED")) {
            m.put(e, (long) staticInt(libc_h.class, e));
        }
        return m;
    }

    /** The bindings whose every named layout member mirrors a C struct member of the same name. */
    private static final List<Class<?>> STRUCTS = List.of(io_uring_sq.class, io_uring_cq.class, io_uring.class,
            io_uring_params.class, io_sqring_offsets.class, io_cqring_offsets.class, iovec.class, rlimit.class);

    private static GroupLayout layout(Class<?> c) {
        try {
            return (GroupLayout) c.getMethod("layout").invoke(null);
        } catch (ReflectiveOperationException e) {
            throw new AssertionError(c.getSimpleName() + " has no layout()", e);
        }
    }

    /** The names of {@code layout}'s named members (padding has none), in order. */
    private static List<String> memberNames(GroupLayout layout) {
        List<String> names = new ArrayList<>();
        for (MemoryLayout member : layout.memberLayouts()) {
            member.name().ifPresent(names::add);
        }
        return names;
    }

    private static long invoke(Class<?> c, String field) {
        try {
            return (long) c.getMethod(field + "$offset").invoke(null);
        } catch (ReflectiveOperationException e) {
            throw new AssertionError(c.getSimpleName() + " has no " + field + "$offset()", e);
        }
    }

    private static int staticInt(Class<?> c, String name) {
        try {
            return c.getField(name).getInt(null);
        } catch (ReflectiveOperationException e) {
            throw new AssertionError(c.getSimpleName() + " has no constant " + name, e);
        }
    }

    @Test
    void javaConstantsMatchTheCCompiler() throws Exception {
        Path gcc = findOnPath("gcc");
        if (gcc == null) {
            IoUringTestSupport.skipOrFail("gcc is not installed (apt-get install gcc); the layout check compiles a C"
                    + " program against <liburing.h>");
            return;
        }
        if (!Files.exists(Path.of("/usr/include/liburing.h"))) {
            IoUringTestSupport.skipOrFail("liburing headers are not installed (apt-get install liburing-dev); the"
                    + " layout check compiles a C program against <liburing.h>");
            return;
        }
        Map<String, Long> expect = expectations();
        StringBuilder c = new StringBuilder("""
                #include <liburing.h>
                #include <stddef.h>
                #include <stdio.h>
                #include <sys/resource.h>
                #include <sys/uio.h>
                int main(void) {
                """);
        List<String> keys = new ArrayList<>(expect.keySet());
        for (int i = 0; i < keys.size(); i++) {
            c.append("    printf(\"%d %lld\\n\", ").append(i).append(", (long long) (").append(keys.get(i))
                    .append("));\n");
        }
        c.append("    return 0;\n}\n");
        Path src = dir.resolve("layout.c");
        Path exe = dir.resolve("layout");
        Files.writeString(src, c);
        String compiled = run(List.of(gcc.toString(), "-O0", "-o", exe.toString(), src.toString()));
        String out = run(List.of(exe.toString()));
        List<String> mismatches = new ArrayList<>();
        int seen = 0;
        for (String line : out.split("\n")) {
            if (line.isBlank()) {
                continue;
            }
            String[] parts = line.trim().split(" ");
            String key = keys.get(Integer.parseInt(parts[0]));
            long cValue = Long.parseLong(parts[1]);
            seen++;
            if (cValue != expect.get(key)) {
                mismatches.add(key + ": C says " + cValue + ", Java uses " + expect.get(key));
            }
        }
        assertEquals(keys.size(), seen, "the C program printed every value; compiler said: " + compiled);
        assertTrue(mismatches.isEmpty(), "layout mismatches:\n" + String.join("\n", mismatches));
    }

    /** Each layout's computed member offsets equal the literal offsets the accessors use. */
    @Test
    void layoutsAgreeWithTheirOffsetConstants() {
        check(io_uring_sqe.layout(), Map.of("opcode", io_uring_sqe.opcode$offset(), "fd", io_uring_sqe.fd$offset(),
                "len", io_uring_sqe.len$offset(), "user_data", io_uring_sqe.user_data$offset(), "personality",
                io_uring_sqe.personality$offset()));
        assertEquals(io_uring_sqe.off$offset(),
                io_uring_sqe.layout().byteOffset(groupElement("$anon$36:2"), groupElement("off")));
        assertEquals(io_uring_sqe.addr$offset(),
                io_uring_sqe.layout().byteOffset(groupElement("$anon$44:2"), groupElement("addr")));
        assertEquals(io_uring_sqe.rw_flags$offset(),
                io_uring_sqe.layout().byteOffset(groupElement("$anon$49:2"), groupElement("rw_flags")));
        assertEquals(io_uring_sqe.buf_index$offset(),
                io_uring_sqe.layout().byteOffset(groupElement("$anon$72:2"), groupElement("buf_index")));
        assertEquals(io_uring_sqe.file_index$offset(),
                io_uring_sqe.layout().byteOffset(groupElement("$anon$80:2"), groupElement("file_index")));
        assertEquals(io_uring_sqe.addr3$offset(), io_uring_sqe.layout().byteOffset(groupElement("$anon$88:2"),
                groupElement("$anon$89:3"), groupElement("addr3")));
        assertEquals(64, io_uring_sqe.sizeof());
        assertEquals(16, io_uring_cqe.sizeof());
        assertEquals(216, io_uring.sizeof());
        assertEquals(120, io_uring_params.sizeof());
        List<Class<?>> structs = new ArrayList<>(List.of(io_uring_cqe.class));
        structs.addAll(STRUCTS);
        for (Class<?> c : structs) {
            GroupLayout layout = layout(c);
            Map<String, Long> offsets = new LinkedHashMap<>();
            for (String n : memberNames(layout)) {
                offsets.put(n, invoke(c, n));
            }
            check(layout, offsets);
        }
    }

    private static void check(GroupLayout layout, Map<String, Long> offsets) {
        offsets.forEach((name, offset) -> assertEquals((long) offset, layout.byteOffset(groupElement(name)),
                layout.name().orElse("?") + "." + name));
    }

    private static Path findOnPath(String tool) {
        for (String d : System.getenv().getOrDefault("PATH", "/usr/bin:/bin").split(":")) {
            Path p = Path.of(d, tool);
            if (Files.isExecutable(p)) {
                return p;
            }
        }
        return null;
    }

    private static String run(List<String> command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError(command + " timed out");
        }
        assertEquals(0, p.exitValue(), command + " failed:\n" + out);
        return out;
    }
}
