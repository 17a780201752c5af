// The reference side of the codec benchmark (benches/src/bin/codec.rs, docs/benchmarks.md).
//
// Usage: java -cp <classes>:<zookeeper jars> CodecBench <vector-dir> <warmup-ms> <rounds> <round-ms> <case>...
//
// For every case it reads <vector-dir>/<case>.bin (the header + body bytes our Rust codec
// produced), builds the same message itself with the reference classes, and cross-checks before
// timing anything:
//   1. the reference encoding of its own message is byte-identical to our bytes;
//   2. decoding our bytes gives records equal to its own, with no byte left over.
// Any mismatch is printed to stderr and the program exits with status 3.
//
// Then it times decode and encode of each case: a time-based warm-up (lets the JIT compile the
// loops), then <rounds> rounds of a fixed iteration count (sized from the warm-up so that a round
// takes about <round-ms>), and prints the median ns/op. Decoding mirrors the 3.8 client's
// ClientCnxn.SendThread.readResponse (ByteBufferInputStream over the frame, BinaryInputArchive,
// ReplyHeader, then the response record); the create request is decoded as the server does
// (RequestHeader, then CreateRequest). Encoding mirrors ClientCnxn.Packet.createBB (a default
// ByteArrayOutputStream, BinaryOutputArchive, header, record, toByteArray) minus the 4-byte
// length placeholder, so both sides produce exactly the vector's bytes.
//
// Each case has its own loop methods so the JIT profiles (and inlines) each loop for one message
// type only; a shared loop would turn the record calls megamorphic and slow the reference down.
//
// Output on stdout, one fact per line:
//   info <key> <value...>
//   check <case> ok <bytes>
//   result <case> <decode|encode> <median-ns-per-op> <iterations-per-round>
//
// The messages built here must stay identical to `benches/src/codec/cases.rs` (`build_*`):
// the cross-check fails loudly when they drift apart.

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

import org.apache.jute.BinaryInputArchive;
import org.apache.jute.BinaryOutputArchive;
import org.apache.jute.Record;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.Id;
import org.apache.zookeeper.data.Stat;
import org.apache.zookeeper.proto.CreateRequest;
import org.apache.zookeeper.proto.GetChildren2Response;
import org.apache.zookeeper.proto.GetDataResponse;
import org.apache.zookeeper.proto.ReplyHeader;
import org.apache.zookeeper.proto.RequestHeader;
import org.apache.zookeeper.proto.WatcherEvent;
import org.apache.zookeeper.server.ByteBufferInputStream;

public final class CodecBench {
    /** Decoded and encoded values are stored here so the JIT cannot drop the work. */
    static Object sink;

    /** Exit status when the cross-check fails. */
    static final int CROSS_CHECK_FAILED = 3;

    /** One message: its vector, the reference's own build of it, and its timing loops. */
    abstract static class Case {
        final String id;
        final byte[] ours;

        Case(String id, byte[] ours) {
            this.id = id;
            this.ours = ours;
        }

        abstract Record header();

        abstract Record body();

        /** Decodes {header, body} from the front of bb, leaving any extra bytes in bb. */
        abstract Record[] decodeForCheck(ByteBuffer bb) throws IOException;

        abstract byte[] encodeOnce() throws IOException;

        /** Runs n decodes of the vector. */
        abstract void decodeLoop(long n) throws IOException;

        /** Runs n encodes of the message. */
        abstract void encodeLoop(long n) throws IOException;
    }

    // ---- the messages (keep in sync with benches/src/codec/cases.rs) ----

    static Stat stat(long czxid, long mzxid, long ctime, long mtime, int version, int cversion,
            int dataLength, int numChildren, long pzxid) {
        return new Stat(czxid, mzxid, ctime, mtime, version, cversion, 0, 0L, dataLength,
                numChildren, pzxid);
    }

    static byte[] getDataPayload() {
        byte[] data = new byte[1024];
        for (int i = 0; i < data.length; i++) {
            data[i] = (byte) (i * 31 + 7);
        }
        return data;
    }

    static List<String> children() {
        List<String> names = new ArrayList<>(1000);
        for (int i = 0; i < 1000; i++) {
            names.add(String.format(Locale.ROOT, "node-%010d", i));
        }
        return names;
    }

    static final class GetDataReply extends Case {
        final ReplyHeader header = new ReplyHeader(1042, 0x1_0000_0456L, 0);
        final GetDataResponse body = new GetDataResponse(getDataPayload(),
                stat(0x1_0000_0010L, 0x1_0000_0456L, 1_700_000_000_000L, 1_700_000_123_456L, 17, 0,
                        1024, 0, 0x1_0000_0010L));

        GetDataReply(byte[] ours) {
            super("get_data_reply", ours);
        }

        Record header() {
            return header;
        }

        Record body() {
            return body;
        }

        Record[] decodeForCheck(ByteBuffer bb) throws IOException {
            BinaryInputArchive ia = BinaryInputArchive.getArchive(new ByteBufferInputStream(bb));
            ReplyHeader h = new ReplyHeader();
            h.deserialize(ia, "header");
            GetDataResponse r = new GetDataResponse();
            r.deserialize(ia, "response");
            return new Record[] {h, r};
        }

        static GetDataResponse decode(byte[] bytes) throws IOException {
            BinaryInputArchive ia = BinaryInputArchive.getArchive(
                    new ByteBufferInputStream(ByteBuffer.wrap(bytes)));
            ReplyHeader h = new ReplyHeader();
            h.deserialize(ia, "header");
            GetDataResponse r = new GetDataResponse();
            if (h.getXid() != -1 && h.getErr() == 0) {
                r.deserialize(ia, "response");
            }
            return r;
        }

        byte[] encodeOnce() throws IOException {
            ByteArrayOutputStream baos = new ByteArrayOutputStream();
            BinaryOutputArchive oa = BinaryOutputArchive.getArchive(baos);
            header.serialize(oa, "header");
            body.serialize(oa, "response");
            return baos.toByteArray();
        }

        void decodeLoop(long n) throws IOException {
            byte[] bytes = ours;
            for (long i = 0; i < n; i++) {
                sink = decode(bytes);
            }
        }

        void encodeLoop(long n) throws IOException {
            for (long i = 0; i < n; i++) {
                sink = encodeOnce();
            }
        }
    }

    static final class GetChildren2Reply extends Case {
        final ReplyHeader header = new ReplyHeader(1043, 0x1_0000_0457L, 0);
        final GetChildren2Response body = new GetChildren2Response(children(),
                stat(0x1_0000_0002L, 0x1_0000_0002L, 1_699_999_000_000L, 1_699_999_000_000L, 0,
                        1000, 0, 1000, 0x1_0000_0457L));

        GetChildren2Reply(byte[] ours) {
            super("get_children2_reply", ours);
        }

        Record header() {
            return header;
        }

        Record body() {
            return body;
        }

        Record[] decodeForCheck(ByteBuffer bb) throws IOException {
            BinaryInputArchive ia = BinaryInputArchive.getArchive(new ByteBufferInputStream(bb));
            ReplyHeader h = new ReplyHeader();
            h.deserialize(ia, "header");
            GetChildren2Response r = new GetChildren2Response();
            r.deserialize(ia, "response");
            return new Record[] {h, r};
        }

        static GetChildren2Response decode(byte[] bytes) throws IOException {
            BinaryInputArchive ia = BinaryInputArchive.getArchive(
                    new ByteBufferInputStream(ByteBuffer.wrap(bytes)));
            ReplyHeader h = new ReplyHeader();
            h.deserialize(ia, "header");
            GetChildren2Response r = new GetChildren2Response();
            if (h.getXid() != -1 && h.getErr() == 0) {
                r.deserialize(ia, "response");
            }
            return r;
        }

        byte[] encodeOnce() throws IOException {
            ByteArrayOutputStream baos = new ByteArrayOutputStream();
            BinaryOutputArchive oa = BinaryOutputArchive.getArchive(baos);
            header.serialize(oa, "header");
            body.serialize(oa, "response");
            return baos.toByteArray();
        }

        void decodeLoop(long n) throws IOException {
            byte[] bytes = ours;
            for (long i = 0; i < n; i++) {
                sink = decode(bytes);
            }
        }

        void encodeLoop(long n) throws IOException {
            for (long i = 0; i < n; i++) {
                sink = encodeOnce();
            }
        }
    }

    static final class CreateRequestCase extends Case {
        final RequestHeader header = new RequestHeader(1044, 1 /* OpCode.create */);
        final CreateRequest body = new CreateRequest("/services/payments/instances/instance-",
                "{\"host\":\"10.0.0.12\",\"port\":8080}".getBytes(StandardCharsets.UTF_8),
                Arrays.asList(
                        new ACL(31 /* ALL */, new Id("digest", "app:NvHpU1Vq8K5XhbZrW2S0YcTb2ZE=")),
                        new ACL(1 /* READ */, new Id("world", "anyone"))),
                3 /* EPHEMERAL_SEQUENTIAL */);

        CreateRequestCase(byte[] ours) {
            super("create_request", ours);
        }

        Record header() {
            return header;
        }

        Record body() {
            return body;
        }

        Record[] decodeForCheck(ByteBuffer bb) throws IOException {
            BinaryInputArchive ia = BinaryInputArchive.getArchive(new ByteBufferInputStream(bb));
            RequestHeader h = new RequestHeader();
            h.deserialize(ia, "header");
            CreateRequest r = new CreateRequest();
            r.deserialize(ia, "request");
            return new Record[] {h, r};
        }

        static CreateRequest decode(byte[] bytes) throws IOException {
            BinaryInputArchive ia = BinaryInputArchive.getArchive(
                    new ByteBufferInputStream(ByteBuffer.wrap(bytes)));
            RequestHeader h = new RequestHeader();
            h.deserialize(ia, "header");
            CreateRequest r = new CreateRequest();
            if (h.getType() == 1) {
                r.deserialize(ia, "request");
            }
            return r;
        }

        byte[] encodeOnce() throws IOException {
            ByteArrayOutputStream baos = new ByteArrayOutputStream();
            BinaryOutputArchive oa = BinaryOutputArchive.getArchive(baos);
            header.serialize(oa, "header");
            body.serialize(oa, "request");
            return baos.toByteArray();
        }

        void decodeLoop(long n) throws IOException {
            byte[] bytes = ours;
            for (long i = 0; i < n; i++) {
                sink = decode(bytes);
            }
        }

        void encodeLoop(long n) throws IOException {
            for (long i = 0; i < n; i++) {
                sink = encodeOnce();
            }
        }
    }

    static final class WatcherEventCase extends Case {
        final ReplyHeader header = new ReplyHeader(-1, -1L, 0);
        final WatcherEvent body = new WatcherEvent(3 /* NodeDataChanged */,
                3 /* SyncConnected */, "/services/payments/config");

        WatcherEventCase(byte[] ours) {
            super("watcher_event", ours);
        }

        Record header() {
            return header;
        }

        Record body() {
            return body;
        }

        Record[] decodeForCheck(ByteBuffer bb) throws IOException {
            BinaryInputArchive ia = BinaryInputArchive.getArchive(new ByteBufferInputStream(bb));
            ReplyHeader h = new ReplyHeader();
            h.deserialize(ia, "header");
            WatcherEvent r = new WatcherEvent();
            r.deserialize(ia, "response");
            return new Record[] {h, r};
        }

        static WatcherEvent decode(byte[] bytes) throws IOException {
            BinaryInputArchive ia = BinaryInputArchive.getArchive(
                    new ByteBufferInputStream(ByteBuffer.wrap(bytes)));
            ReplyHeader h = new ReplyHeader();
            h.deserialize(ia, "header");
            WatcherEvent r = new WatcherEvent();
            if (h.getXid() == -1) {
                r.deserialize(ia, "response");
            }
            return r;
        }

        byte[] encodeOnce() throws IOException {
            ByteArrayOutputStream baos = new ByteArrayOutputStream();
            BinaryOutputArchive oa = BinaryOutputArchive.getArchive(baos);
            header.serialize(oa, "header");
            body.serialize(oa, "response");
            return baos.toByteArray();
        }

        void decodeLoop(long n) throws IOException {
            byte[] bytes = ours;
            for (long i = 0; i < n; i++) {
                sink = decode(bytes);
            }
        }

        void encodeLoop(long n) throws IOException {
            for (long i = 0; i < n; i++) {
                sink = encodeOnce();
            }
        }
    }

    static Case newCase(String id, byte[] ours) {
        switch (id) {
            case "get_data_reply":
                return new GetDataReply(ours);
            case "get_children2_reply":
                return new GetChildren2Reply(ours);
            case "create_request":
                return new CreateRequestCase(ours);
            case "watcher_event":
                return new WatcherEventCase(ours);
            default:
                throw new IllegalArgumentException("unknown case " + id);
        }
    }

    // ---- cross-check ----

    static void fail(String message) {
        System.err.println("CROSS-CHECK FAILED: " + message);
        System.exit(CROSS_CHECK_FAILED);
    }

    static String hex(byte[] bytes, int from, int to) {
        StringBuilder sb = new StringBuilder();
        for (int i = Math.max(0, from); i < Math.min(bytes.length, to); i++) {
            sb.append(String.format(Locale.ROOT, "%02x", bytes[i]));
        }
        return sb.toString();
    }

    static void crossCheck(Case c) throws IOException {
        byte[] reference = c.encodeOnce();
        if (!Arrays.equals(reference, c.ours)) {
            int at = Arrays.mismatch(reference, c.ours);
            fail(c.id + ": the reference encoding (" + reference.length + " bytes) differs from ours ("
                    + c.ours.length + " bytes) at byte " + at + ": reference ..."
                    + hex(reference, at - 8, at + 8) + "..., ours ..." + hex(c.ours, at - 8, at + 8)
                    + "...");
        }
        ByteBuffer bb = ByteBuffer.wrap(c.ours);
        Record[] decoded = c.decodeForCheck(bb);
        if (bb.remaining() != 0) {
            fail(c.id + ": " + bb.remaining() + " bytes left after the reference decoded ours");
        }
        if (!decoded[0].equals(c.header())) {
            fail(c.id + ": header decoded by the reference is " + decoded[0] + ", expected "
                    + c.header());
        }
        if (!decoded[1].equals(c.body())) {
            fail(c.id + ": body decoded by the reference differs from the reference's own");
        }
    }

    // ---- timing ----

    interface Loop {
        void run(long n) throws IOException;
    }

    /** Warms up for warmupNanos, then times rounds of a fixed count; returns {median ns/op, iters}. */
    static double[] time(Loop loop, long warmupNanos, int rounds, long roundNanos) throws IOException {
        long batch = 1;
        long batchNanos;
        long deadline = System.nanoTime() + warmupNanos;
        while (true) {
            long start = System.nanoTime();
            loop.run(batch);
            long end = System.nanoTime();
            batchNanos = Math.max(1, end - start);
            if (end >= deadline && batchNanos >= 1_000_000) {
                break;
            }
            if (batchNanos < 1_000_000) {
                batch *= 2;
            }
        }
        double perOp = (double) batchNanos / batch;
        long iters = Math.max(1, (long) (roundNanos / perOp));
        double[] samples = new double[rounds];
        for (int r = 0; r < rounds; r++) {
            long start = System.nanoTime();
            loop.run(iters);
            samples[r] = (double) (System.nanoTime() - start) / iters;
        }
        Arrays.sort(samples);
        double median = rounds % 2 == 1 ? samples[rounds / 2]
                : (samples[rounds / 2 - 1] + samples[rounds / 2]) / 2;
        return new double[] {median, iters};
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 5) {
            System.err.println(
                    "usage: CodecBench <vector-dir> <warmup-ms> <rounds> <round-ms> <case>...");
            System.exit(2);
        }
        Path dir = Path.of(args[0]);
        long warmupNanos = Long.parseLong(args[1]) * 1_000_000L;
        int rounds = Integer.parseInt(args[2]);
        long roundNanos = Long.parseLong(args[3]) * 1_000_000L;

        List<Case> cases = new ArrayList<>();
        for (int i = 4; i < args.length; i++) {
            cases.add(newCase(args[i], Files.readAllBytes(dir.resolve(args[i] + ".bin"))));
        }

        System.out.println("info java_version " + System.getProperty("java.version"));
        System.out.println("info vm " + System.getProperty("java.vm.name") + " "
                + System.getProperty("java.vm.version"));
        List<String> gcs = new ArrayList<>();
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            gcs.add(gc.getName());
        }
        System.out.println("info gc " + String.join(", ", gcs));
        System.out.println("info max_heap_mb " + Runtime.getRuntime().maxMemory() / (1024 * 1024));

        // Every cross-check passes before anything is timed.
        for (Case c : cases) {
            crossCheck(c);
            System.out.println("check " + c.id + " ok " + c.ours.length);
        }
        System.out.flush();

        for (Case c : cases) {
            double[] decode = time(c::decodeLoop, warmupNanos, rounds, roundNanos);
            System.out.printf(Locale.ROOT, "result %s decode %.3f %d%n", c.id, decode[0], (long) decode[1]);
            double[] encode = time(c::encodeLoop, warmupNanos, rounds, roundNanos);
            System.out.printf(Locale.ROOT, "result %s encode %.3f %d%n", c.id, encode[0], (long) encode[1]);
            System.out.flush();
        }
        if (sink == null) {
            System.out.println("info sink null");
        }
    }
}
