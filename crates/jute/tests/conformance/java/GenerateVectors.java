/*
 * Conformance vectors for the `jute` crate, produced by the reference serializer.
 *
 * Builds instances of the ZooKeeper 3.8 record classes (org.apache.zookeeper.data.*,
 * org.apache.zookeeper.proto.*, and the multi bodies MultiOperationRecord / MultiResponse),
 * serializes each with org.apache.jute.BinaryOutputArchive and prints one line per vector:
 *
 *     <jute-name> <case-label> <lowercase-hex>
 *
 * <jute-name> is the record's class name relative to org.apache.zookeeper ("data.Stat",
 * "proto.CreateRequest"), as in jute::RECORD_NAMES, or "MultiRequest" / "MultiResponse".
 * Labels are unique per name and contain no spaces. The output is deterministic: fixed values,
 * fixed order, no clocks, no randomness, no hash iteration.
 *
 * Run by scripts/gen-vectors.sh, which writes crates/jute/tests/conformance/vectors.txt; the Rust
 * test crates/jute/tests/conformance.rs decodes and re-encodes every vector.
 *
 * Surprises of the 3.8 reference that shape the vectors:
 *
 * - Strings are not written as UTF-8 but one UTF-16 code unit at a time
 *   (BinaryOutputArchive.stringToByteBuffer), so a character outside the Basic Multilingual Plane
 *   becomes two 3-byte surrogate sequences (CESU-8), and a lone surrogate becomes one 3-byte
 *   surrogate sequence (not '?', as String.getBytes(UTF_8) would give). Neither is valid UTF-8;
 *   the reference's own reader (new String(bytes, UTF_8)) turns each 3-byte surrogate sequence
 *   into one U+FFFD, a valid pair included. Our codec decodes a pair to its character and any
 *   other surrogate sequence to one U+FFFD, and writes standard UTF-8. Vectors whose strings
 *   contain such characters have labels ending in "-cesu8", and each has a twin whose label ends
 *   in "-utf8" instead: the same record written by Utf8Archive below (standard UTF-8, every
 *   unpaired surrogate as U+FFFD), which is what the Rust codec must decode the "-cesu8" bytes to
 *   and re-encode them as. Every other string here is BMP-only, where both encodings agree.
 * - ConnectRequest and ConnectResponse have no readOnly field in the 3.8 jute classes. The client
 *   (ClientCnxn.Packet.createBB) writes the request record and then writeBool(readOnly,
 *   "readOnly") on the same archive; the server (ZooKeeperServer.finishSessionInit) does the same
 *   after the response record unless the client is an old one. appendReadOnly() below does
 *   exactly that. ConnectResponse also has vectors without the byte (old servers).
 * - Op has no public way to make a create2 operation (Op.create picks create, createContainer or
 *   createTTL from the mode), yet MultiOperationRecord serializes type create2 (15) and the server
 *   accepts it. withType() sets the private Op.type by reflection so that the reference class
 *   still does the serializing.
 * - OpResult.CreateResult can only be built with type create (path only) or create2 (path and
 *   stat); a server reports createContainer and createTTL results as create2 too.
 */

import java.io.BufferedWriter;
import java.io.ByteArrayOutputStream;
import java.io.DataOutput;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import org.apache.jute.BinaryOutputArchive;
import org.apache.jute.Record;
import org.apache.zookeeper.AddWatchMode;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.MultiOperationRecord;
import org.apache.zookeeper.MultiResponse;
import org.apache.zookeeper.Op;
import org.apache.zookeeper.OpResult;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.ClientInfo;
import org.apache.zookeeper.data.Id;
import org.apache.zookeeper.data.Stat;
import org.apache.zookeeper.proto.AddWatchRequest;
import org.apache.zookeeper.proto.AuthPacket;
import org.apache.zookeeper.proto.CheckVersionRequest;
import org.apache.zookeeper.proto.CheckWatchesRequest;
import org.apache.zookeeper.proto.ConnectRequest;
import org.apache.zookeeper.proto.ConnectResponse;
import org.apache.zookeeper.proto.Create2Response;
import org.apache.zookeeper.proto.CreateRequest;
import org.apache.zookeeper.proto.CreateResponse;
import org.apache.zookeeper.proto.CreateTTLRequest;
import org.apache.zookeeper.proto.DeleteRequest;
import org.apache.zookeeper.proto.ErrorResponse;
import org.apache.zookeeper.proto.ExistsRequest;
import org.apache.zookeeper.proto.ExistsResponse;
import org.apache.zookeeper.proto.GetACLRequest;
import org.apache.zookeeper.proto.GetACLResponse;
import org.apache.zookeeper.proto.GetAllChildrenNumberRequest;
import org.apache.zookeeper.proto.GetAllChildrenNumberResponse;
import org.apache.zookeeper.proto.GetChildren2Request;
import org.apache.zookeeper.proto.GetChildren2Response;
import org.apache.zookeeper.proto.GetChildrenRequest;
import org.apache.zookeeper.proto.GetChildrenResponse;
import org.apache.zookeeper.proto.GetDataRequest;
import org.apache.zookeeper.proto.GetDataResponse;
import org.apache.zookeeper.proto.GetEphemeralsRequest;
import org.apache.zookeeper.proto.GetEphemeralsResponse;
import org.apache.zookeeper.proto.GetMaxChildrenRequest;
import org.apache.zookeeper.proto.GetMaxChildrenResponse;
import org.apache.zookeeper.proto.GetSASLRequest;
import org.apache.zookeeper.proto.MultiHeader;
import org.apache.zookeeper.proto.ReconfigRequest;
import org.apache.zookeeper.proto.RemoveWatchesRequest;
import org.apache.zookeeper.proto.ReplyHeader;
import org.apache.zookeeper.proto.RequestHeader;
import org.apache.zookeeper.proto.SetACLRequest;
import org.apache.zookeeper.proto.SetACLResponse;
import org.apache.zookeeper.proto.SetDataRequest;
import org.apache.zookeeper.proto.SetDataResponse;
import org.apache.zookeeper.proto.SetMaxChildrenRequest;
import org.apache.zookeeper.proto.SetSASLRequest;
import org.apache.zookeeper.proto.SetSASLResponse;
import org.apache.zookeeper.proto.SetWatches;
import org.apache.zookeeper.proto.SetWatches2;
import org.apache.zookeeper.proto.SyncRequest;
import org.apache.zookeeper.proto.SyncResponse;
import org.apache.zookeeper.proto.WatcherEvent;
import org.apache.zookeeper.proto.WhoAmIResponse;

public final class GenerateVectors {

    // ---------------------------------------------------------------- output

    /** Writes extra fields after a record on the same archive. */
    private interface Trailer {
        void write(BinaryOutputArchive archive) throws IOException;
    }

    private static final char[] HEX = "0123456789abcdef".toCharArray();

    private final BufferedWriter out;
    private final Set<String> seen = new HashSet<>();

    private GenerateVectors(BufferedWriter out) {
        this.out = out;
    }

    private void emit(String name, String label, Record record) throws IOException {
        emit(name, label, record, null);
    }

    private void emit(String name, String label, Record record, Trailer trailer) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        write(name, label, record, trailer, BinaryOutputArchive.getArchive(bytes), bytes);
        if (label.endsWith(CESU8)) {
            String twin = label.substring(0, label.length() - CESU8.length()) + UTF8;
            ByteArrayOutputStream utf8 = new ByteArrayOutputStream();
            write(name, twin, record, trailer, new Utf8Archive(new DataOutputStream(utf8)), utf8);
        } else if (label.endsWith(UTF8)) {
            throw new IllegalArgumentException("-utf8 labels are the twins of -cesu8 ones: " + label);
        }
    }

    private static final String CESU8 = "-cesu8";
    private static final String UTF8 = "-utf8";

    private void write(String name, String label, Record record, Trailer trailer,
            BinaryOutputArchive archive, ByteArrayOutputStream bytes) throws IOException {
        if (!label.matches("[a-z0-9][a-z0-9.-]*")) {
            throw new IllegalArgumentException("bad label: " + label);
        }
        if (!seen.add(name + " " + label)) {
            throw new IllegalArgumentException("duplicate vector: " + name + " " + label);
        }
        record.serialize(archive, "");
        if (trailer != null) {
            trailer.write(archive);
        }
        byte[] raw = bytes.toByteArray();
        StringBuilder line = new StringBuilder(name.length() + label.length() + 2 + raw.length * 2);
        line.append(name).append(' ').append(label).append(' ');
        for (byte b : raw) {
            line.append(HEX[(b >> 4) & 0xf]).append(HEX[b & 0xf]);
        }
        out.write(line.toString());
        out.write('\n');
    }

    /**
     * The reference archive with one change: strings are written as standard UTF-8 (a surrogate
     * pair as one 4-byte sequence), every unpaired surrogate as U+FFFD. This gives the twins of
     * the "-cesu8" vectors: the value a decoder reading Java's form must give, in the form the
     * Rust codec writes.
     */
    private static final class Utf8Archive extends BinaryOutputArchive {
        Utf8Archive(DataOutput out) {
            super(out);
        }

        @Override
        public void writeString(String s, String tag) throws IOException {
            if (s == null) {
                super.writeString(null, tag);
                return;
            }
            int[] codePoints = s.codePoints()
                    .map(cp -> cp >= Character.MIN_SURROGATE && cp <= Character.MAX_SURROGATE
                            ? 0xfffd : cp)
                    .toArray();
            writeBuffer(new String(codePoints, 0, codePoints.length).getBytes(StandardCharsets.UTF_8),
                    tag);
        }
    }

    // ---------------------------------------------------------------- values

    /** A labelled value. */
    private static final class Case<T> {
        final String label;
        final T value;

        Case(String label, T value) {
            this.label = label;
            this.value = value;
        }
    }

    private static <T> Case<T> c(String label, T value) {
        return new Case<>(label, value);
    }

    private static final int MIN_INT = Integer.MIN_VALUE;
    private static final int MAX_INT = Integer.MAX_VALUE;
    private static final long MIN_LONG = Long.MIN_VALUE;
    private static final long MAX_LONG = Long.MAX_VALUE;

    /** "/ключ/節點/ü": 2- and 3-byte sequences, all in the BMP (UTF-8 and CESU-8 agree). */
    static final String NON_ASCII = "/\u043a\u043b\u044e\u0447/\u7bc0\u9ede/\u00fc";
    /** "/ключ/節點/😀": the emoji is a surrogate pair, written as CESU-8 by the reference. */
    static final String SUPPLEMENTARY = "/\u043a\u043b\u044e\u0447/\u7bc0\u9ede/\ud83d\ude00";
    /** A lone high surrogate, written by the reference as the 3 bytes ed a0 80. */
    static final String LONE_SURROGATE = "/lone\ud800";
    /** "us😀er": a digest user name outside the BMP. */
    static final String EMOJI_USER = "us\ud83d\ude00er";
    /**
     * Unpaired surrogates every way: a high alone, a low alone, a reversed pair, a high before a
     * pair, and a high at the end.
     */
    static final List<String> LONE_SURROGATES = Arrays.asList(
            "high\ud800alone", "low\udc00alone", "\ude00\ud83d", "\ud83d\ud83d\ude00", "end\ud83d");
    /** NUL (one 0x00 byte, not modified UTF-8's c0 80) and the 1/2/3-byte boundaries. */
    static final String BOUNDARIES = "a\u0000b\u007f\u0080\u07ff\u0800\ufffd\uffff";

    /** A deterministic byte pattern: byte i is (i * 31 + 7) mod 256. */
    static byte[] pattern(int length) {
        byte[] data = new byte[length];
        for (int i = 0; i < length; i++) {
            data[i] = (byte) (i * 31 + 7);
        }
        return data;
    }

    static byte[] allByteValues() {
        byte[] data = new byte[256];
        for (int i = 0; i < 256; i++) {
            data[i] = (byte) i;
        }
        return data;
    }

    static byte[] utf8(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    static String repeat(String unit, int times) {
        StringBuilder text = new StringBuilder(unit.length() * times);
        for (int i = 0; i < times; i++) {
            text.append(unit);
        }
        return text.toString();
    }

    /** "/" followed by 4095 'x': a 4 KiB path. */
    static final String LONG_PATH = "/" + repeat("x", 4095);

    static final int LARGE = 100 * 1024;

    static List<Case<String>> pathCases() {
        return Arrays.asList(
                c("root", "/"),
                c("ascii", "/app/node-1"),
                c("null", null),
                c("empty", ""),
                c("non-ascii", NON_ASCII),
                c("boundaries", BOUNDARIES));
    }

    static Stat stat(long czxid, long mzxid, long ctime, long mtime, int version, int cversion,
            int aversion, long ephemeralOwner, int dataLength, int numChildren, long pzxid) {
        return new Stat(czxid, mzxid, ctime, mtime, version, cversion, aversion, ephemeralOwner,
                dataLength, numChildren, pzxid);
    }

    static Stat minStat() {
        return stat(MIN_LONG, MIN_LONG, MIN_LONG, MIN_LONG, MIN_INT, MIN_INT, MIN_INT, MIN_LONG,
                MIN_INT, MIN_INT, MIN_LONG);
    }

    static Stat maxStat() {
        return stat(MAX_LONG, MAX_LONG, MAX_LONG, MAX_LONG, MAX_INT, MAX_INT, MAX_INT, MAX_LONG,
                MAX_INT, MAX_INT, MAX_LONG);
    }

    /** Every field distinct, so a swapped pair of fields shows. */
    static Stat typicalStat() {
        return stat(0x100000002L, 0x100000007L, 1700000000123L, 1700000456789L, 3, 5, 1,
                0x0123456789abcdefL, 11, 2, 0x100000009L);
    }

    static List<Case<Stat>> statCases() {
        return Arrays.asList(
                c("zero", new Stat()),
                c("min", minStat()),
                c("max", maxStat()),
                c("minus-one", stat(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1)),
                c("typical", typicalStat()),
                // The server marks a container with ephemeralOwner Long.MIN_VALUE and a TTL node
                // with 0xff in the top byte and the TTL below it.
                c("container-owner", stat(5, 5, 0, 0, 0, 0, 0, MIN_LONG, 0, 0, 5)),
                c("ttl-owner", stat(6, 6, 0, 0, 0, 0, 0, 0xff00000000001234L, 0, 0, 6)));
    }

    static final Id WORLD_ANYONE = new Id("world", "anyone");

    static List<ACL> openAcl() {
        return new ArrayList<>(ZooDefs.Ids.OPEN_ACL_UNSAFE);
    }

    static List<ACL> creatorAll() {
        return new ArrayList<>(ZooDefs.Ids.CREATOR_ALL_ACL);
    }

    static List<ACL> mixedAcl() {
        return Arrays.asList(
                new ACL(ZooDefs.Perms.READ | ZooDefs.Perms.WRITE,
                        new Id("digest", "user:tpUq/4Pn5A64fVZyQ0gOJ8ZWqkY=")),
                new ACL(ZooDefs.Perms.ADMIN, new Id("ip", "10.0.0.0/8")),
                new ACL(0, new Id("x509", "CN=\u043a\u043b\u044e\u0447,O=\u7bc0\u9ede")),
                new ACL(MIN_INT, new Id("", "")),
                new ACL(-1, new Id(null, null)));
    }

    static List<ACL> manyAcl(int count) {
        List<ACL> acl = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            acl.add(new ACL(i % 32, new Id("digest", String.format("user%03d:hash%03d", i, i))));
        }
        return acl;
    }

    static List<Case<List<ACL>>> aclListCases() {
        return Arrays.asList(
                c("open", openAcl()),
                c("null", null),
                c("empty", Collections.emptyList()),
                c("mixed", mixedAcl()),
                c("many-100", manyAcl(100)));
    }

    static List<String> children(int count) {
        List<String> names = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            names.add(String.format("child-%04d", i));
        }
        return names;
    }

    static List<Case<List<String>>> stringListCases() {
        return Arrays.asList(
                c("three", Arrays.asList("a", "b", "c")),
                c("null", null),
                c("empty", Collections.emptyList()),
                c("one-empty-string", Collections.singletonList("")),
                c("null-elements", Arrays.asList(null, "x", null)),
                c("non-ascii", Arrays.asList("\u043a\u043b\u044e\u0447", "\u7bc0\u9ede", "\u00fc")),
                c("many-1000", children(1000)));
    }

    static List<Case<byte[]>> bufferCases() {
        return Arrays.asList(
                c("hello", utf8("hello")),
                c("null", null),
                c("empty", new byte[0]),
                c("all-byte-values", allByteValues()),
                c("pattern-4k", pattern(4096)));
    }

    // ---------------------------------------------------------------- data.*

    private void data() throws IOException {
        emit("data.Id", "world-anyone", new Id("world", "anyone"));
        emit("data.Id", "null-null", new Id(null, null));
        emit("data.Id", "empty-empty", new Id("", ""));
        emit("data.Id", "digest", new Id("digest", "user:tpUq/4Pn5A64fVZyQ0gOJ8ZWqkY="));
        emit("data.Id", "non-ascii", new Id("x509", "CN=\u043a\u043b\u044e\u0447,O=\u7bc0\u9ede\u00fc"));
        emit("data.Id", "boundaries", new Id("ip", BOUNDARIES));
        emit("data.Id", "supplementary-cesu8", new Id("sasl", "user\ud83d\ude00"));
        emit("data.Id", "digest-supplementary-cesu8",
                new Id("digest", EMOJI_USER + ":tpUq/4Pn5A64fVZyQ0gOJ8ZWqkY="));
        emit("data.Id", "lone-high-cesu8", new Id("sasl", LONE_SURROGATES.get(0)));
        emit("data.Id", "lone-low-cesu8", new Id("sasl", LONE_SURROGATES.get(1)));
        emit("data.Id", "reversed-pair-cesu8", new Id("sasl", LONE_SURROGATES.get(2)));
        emit("data.Id", "high-then-pair-cesu8", new Id("sasl", LONE_SURROGATES.get(3)));
        emit("data.Id", "high-at-end-cesu8", new Id("sasl", LONE_SURROGATES.get(4)));

        emit("data.ACL", "open-all", new ACL(ZooDefs.Perms.ALL, WORLD_ANYONE));
        emit("data.ACL", "read-only", new ACL(ZooDefs.Perms.READ, WORLD_ANYONE));
        emit("data.ACL", "zero-perms-null-id", new ACL(0, new Id(null, null)));
        emit("data.ACL", "perms-min", new ACL(MIN_INT, new Id("", "")));
        emit("data.ACL", "perms-minus-one", new ACL(-1, new Id("auth", "")));

        for (Case<Stat> s : statCases()) {
            emit("data.Stat", s.label, s.value);
        }

        emit("data.ClientInfo", "digest", new ClientInfo("digest", "user"));
        emit("data.ClientInfo", "null-null", new ClientInfo(null, null));
        emit("data.ClientInfo", "empty-empty", new ClientInfo("", ""));
        emit("data.ClientInfo", "non-ascii", new ClientInfo("x509", "CN=\u043a\u043b\u044e\u0447"));
        emit("data.ClientInfo", "supplementary-cesu8", new ClientInfo("sasl", "\ud83d\ude00"));
        emit("data.ClientInfo", "digest-supplementary-cesu8", new ClientInfo("digest", EMOJI_USER));
        emit("data.ClientInfo", "lone-surrogates-cesu8", new ClientInfo("sasl", "\udc00x\ud800"));
    }

    // ---------------------------------------------------------------- session

    /** What ClientCnxn and ZooKeeperServer append after the connect records (see above). */
    private static Trailer appendReadOnly(boolean readOnly) {
        return archive -> archive.writeBool(readOnly, "readOnly");
    }

    private void session() throws IOException {
        String req = "proto.ConnectRequest";
        emit(req, "new-session", new ConnectRequest(0, 0, 30000, 0, new byte[16]),
                appendReadOnly(false));
        emit(req, "resume-read-only",
                new ConnectRequest(0, 0x1234567890L, 40000, 0x0123456789abcdefL, pattern(16)),
                appendReadOnly(true));
        emit(req, "null-passwd", new ConnectRequest(0, -1, -1, -1, null), appendReadOnly(false));
        emit(req, "min-empty-passwd",
                new ConnectRequest(MIN_INT, MIN_LONG, MIN_INT, MIN_LONG, new byte[0]),
                appendReadOnly(true));
        emit(req, "max", new ConnectRequest(MAX_INT, MAX_LONG, MAX_INT, MAX_LONG, allByteValues()),
                appendReadOnly(false));

        String rsp = "proto.ConnectResponse";
        emit(rsp, "new-session", new ConnectResponse(0, 30000, 0x100000abcdL, pattern(16)),
                appendReadOnly(false));
        emit(rsp, "read-only-server", new ConnectResponse(0, 4000, 0, new byte[16]),
                appendReadOnly(true));
        emit(rsp, "no-readonly-byte", new ConnectResponse(0, 30000, 0x100000abcdL, pattern(16)));
        emit(rsp, "expired-no-readonly-byte", new ConnectResponse(0, 0, 0, null));
        emit(rsp, "expired", new ConnectResponse(0, 0, 0, new byte[16]), appendReadOnly(false));
        emit(rsp, "min-empty-passwd", new ConnectResponse(MIN_INT, MIN_INT, MIN_LONG, new byte[0]),
                appendReadOnly(true));
        emit(rsp, "max", new ConnectResponse(MAX_INT, MAX_INT, MAX_LONG, allByteValues()));

        emit("proto.RequestHeader", "get-data", new RequestHeader(1, ZooDefs.OpCode.getData));
        emit("proto.RequestHeader", "ping", new RequestHeader(-2, ZooDefs.OpCode.ping));
        emit("proto.RequestHeader", "auth", new RequestHeader(-4, ZooDefs.OpCode.auth));
        emit("proto.RequestHeader", "set-watches2", new RequestHeader(-8, ZooDefs.OpCode.setWatches2));
        emit("proto.RequestHeader", "close-session", new RequestHeader(7, ZooDefs.OpCode.closeSession));
        emit("proto.RequestHeader", "min-max", new RequestHeader(MIN_INT, MAX_INT));
        emit("proto.RequestHeader", "max-min", new RequestHeader(MAX_INT, MIN_INT));
        emit("proto.RequestHeader", "unknown-op", new RequestHeader(42, 9999));

        emit("proto.ReplyHeader", "ok", new ReplyHeader(1, 0x100000001L, 0));
        emit("proto.ReplyHeader", "notification", new ReplyHeader(-1, -1, 0));
        emit("proto.ReplyHeader", "ping", new ReplyHeader(-2, 0x100000005L, 0));
        emit("proto.ReplyHeader", "no-node", new ReplyHeader(5, 10,
                KeeperException.Code.NONODE.intValue()));
        emit("proto.ReplyHeader", "min", new ReplyHeader(MIN_INT, MIN_LONG, MIN_INT));
        emit("proto.ReplyHeader", "max", new ReplyHeader(MAX_INT, MAX_LONG, MAX_INT));

        emit("proto.MultiHeader", "request-op", new MultiHeader(ZooDefs.OpCode.create, false, -1));
        emit("proto.MultiHeader", "end", new MultiHeader(-1, true, -1));
        emit("proto.MultiHeader", "error-result", new MultiHeader(ZooDefs.OpCode.error, false,
                KeeperException.Code.NONODE.intValue()));
        emit("proto.MultiHeader", "ok-result", new MultiHeader(ZooDefs.OpCode.create2, false, 0));
        emit("proto.MultiHeader", "min-max", new MultiHeader(MIN_INT, false, MAX_INT));
        emit("proto.MultiHeader", "max-done-min", new MultiHeader(MAX_INT, true, MIN_INT));

        int syncConnected = Watcher.Event.KeeperState.SyncConnected.getIntValue();
        emit("proto.WatcherEvent", "node-created", new WatcherEvent(
                Watcher.Event.EventType.NodeCreated.getIntValue(), syncConnected, "/a"));
        emit("proto.WatcherEvent", "children-changed-non-ascii", new WatcherEvent(
                Watcher.Event.EventType.NodeChildrenChanged.getIntValue(), syncConnected, NON_ASCII));
        emit("proto.WatcherEvent", "none-expired-null-path", new WatcherEvent(
                Watcher.Event.EventType.None.getIntValue(),
                Watcher.Event.KeeperState.Expired.getIntValue(), null));
        emit("proto.WatcherEvent", "data-changed-empty-path", new WatcherEvent(
                Watcher.Event.EventType.NodeDataChanged.getIntValue(), syncConnected, ""));
        emit("proto.WatcherEvent", "unknown-min-max", new WatcherEvent(MIN_INT, MAX_INT, LONG_PATH));
        emit("proto.WatcherEvent", "supplementary-cesu8", new WatcherEvent(
                Watcher.Event.EventType.NodeDeleted.getIntValue(), syncConnected, SUPPLEMENTARY));

        emit("proto.ErrorResponse", "ok", new ErrorResponse(0));
        emit("proto.ErrorResponse", "no-node", new ErrorResponse(KeeperException.Code.NONODE.intValue()));
        emit("proto.ErrorResponse", "runtime-inconsistency",
                new ErrorResponse(KeeperException.Code.RUNTIMEINCONSISTENCY.intValue()));
        emit("proto.ErrorResponse", "min", new ErrorResponse(MIN_INT));
        emit("proto.ErrorResponse", "max", new ErrorResponse(MAX_INT));

        emit("proto.AuthPacket", "digest", new AuthPacket(0, "digest", utf8("user:password")));
        emit("proto.AuthPacket", "null-null", new AuthPacket(0, null, null));
        emit("proto.AuthPacket", "empty-empty", new AuthPacket(0, "", new byte[0]));
        emit("proto.AuthPacket", "min-all-bytes", new AuthPacket(MIN_INT, "x509", allByteValues()));
        emit("proto.AuthPacket", "max-non-ascii", new AuthPacket(MAX_INT,
                "\u043a\u043b\u044e\u0447", utf8(NON_ASCII)));
    }

    // ---------------------------------------------------------------- node operations

    private void nodes() throws IOException {
        String create = "proto.CreateRequest";
        emit(create, "persistent-open", new CreateRequest("/a", utf8("hello"), openAcl(),
                CreateMode.PERSISTENT.toFlag()));
        emit(create, "ephemeral-sequential-creator-all", new CreateRequest("/app/lock-",
                new byte[0], creatorAll(), CreateMode.EPHEMERAL_SEQUENTIAL.toFlag()));
        emit(create, "container-null-data", new CreateRequest("/c", null, openAcl(),
                CreateMode.CONTAINER.toFlag()));
        emit(create, "all-null", new CreateRequest(null, null, null, 0));
        emit(create, "empty-path-empty-acl", new CreateRequest("", new byte[0],
                Collections.emptyList(), CreateMode.EPHEMERAL.toFlag()));
        emit(create, "non-ascii-mixed-acl", new CreateRequest(NON_ASCII, utf8(NON_ASCII),
                mixedAcl(), CreateMode.PERSISTENT_SEQUENTIAL.toFlag()));
        emit(create, "many-acl-flags-min", new CreateRequest(LONG_PATH, allByteValues(),
                manyAcl(100), MIN_INT));
        emit(create, "large-data-100k", new CreateRequest("/big", pattern(LARGE), openAcl(),
                CreateMode.PERSISTENT.toFlag()));
        emit(create, "supplementary-cesu8", new CreateRequest(SUPPLEMENTARY, null, openAcl(), 0));
        emit(create, "lone-surrogate-cesu8", new CreateRequest(LONE_SURROGATE, null, openAcl(), 0));

        String ttl = "proto.CreateTTLRequest";
        emit(ttl, "persistent-ttl", new CreateTTLRequest("/ttl", utf8("t"), openAcl(),
                CreateMode.PERSISTENT_WITH_TTL.toFlag(), 1000));
        emit(ttl, "sequential-max-ttl", new CreateTTLRequest("/ttl/seq-", new byte[0],
                creatorAll(), CreateMode.PERSISTENT_SEQUENTIAL_WITH_TTL.toFlag(), (1L << 40) - 1));
        emit(ttl, "all-null-min", new CreateTTLRequest(null, null, null, MIN_INT, MIN_LONG));
        emit(ttl, "empty-max", new CreateTTLRequest("", new byte[0], Collections.emptyList(),
                MAX_INT, MAX_LONG));
        emit(ttl, "non-ascii-minus-one", new CreateTTLRequest(NON_ASCII, allByteValues(),
                mixedAcl(), CreateMode.PERSISTENT.toFlag(), -1));

        for (Case<String> p : pathCases()) {
            emit("proto.CreateResponse", p.label, new CreateResponse(p.value));
        }
        emit("proto.CreateResponse", "sequential", new CreateResponse("/app/lock-0000000042"));
        emit("proto.CreateResponse", "long-4k", new CreateResponse(LONG_PATH));

        List<Case<String>> paths = pathCases();
        List<Case<Stat>> stats = statCases();
        for (int i = 0; i < paths.size(); i++) {
            Case<String> p = paths.get(i);
            Case<Stat> s = stats.get(i % stats.size());
            emit("proto.Create2Response", p.label + "-" + s.label, new Create2Response(p.value, s.value));
        }
        emit("proto.Create2Response", "supplementary-cesu8",
                new Create2Response(SUPPLEMENTARY, typicalStat()));

        int[] versions = {-1, 0, MIN_INT, MAX_INT, 7, 1};
        for (int i = 0; i < paths.size(); i++) {
            Case<String> p = paths.get(i);
            emit("proto.DeleteRequest", p.label + "-v" + versions[i],
                    new DeleteRequest(p.value, versions[i]));
            emit("proto.CheckVersionRequest", p.label + "-v" + versions[i],
                    new CheckVersionRequest(p.value, versions[i]));
        }

        for (int i = 0; i < paths.size(); i++) {
            Case<String> p = paths.get(i);
            boolean watch = i % 2 == 0;
            String label = p.label + (watch ? "-watch" : "-no-watch");
            emit("proto.ExistsRequest", label, new ExistsRequest(p.value, watch));
            emit("proto.GetDataRequest", label, new GetDataRequest(p.value, watch));
            emit("proto.GetChildrenRequest", label, new GetChildrenRequest(p.value, watch));
            emit("proto.GetChildren2Request", label, new GetChildren2Request(p.value, !watch));
        }
        // The same path with both flags, so the boolean is the only difference.
        emit("proto.ExistsRequest", "ascii-watch", new ExistsRequest("/app/node-1", true));
        emit("proto.GetDataRequest", "ascii-watch", new GetDataRequest("/app/node-1", true));

        for (Case<Stat> s : stats) {
            emit("proto.ExistsResponse", s.label, new ExistsResponse(s.value));
            emit("proto.SetDataResponse", s.label, new SetDataResponse(s.value));
            emit("proto.SetACLResponse", s.label, new SetACLResponse(s.value));
        }

        List<Case<byte[]>> buffers = bufferCases();
        for (int i = 0; i < buffers.size(); i++) {
            Case<byte[]> b = buffers.get(i);
            Case<Stat> s = stats.get(i % stats.size());
            emit("proto.GetDataResponse", b.label + "-" + s.label, new GetDataResponse(b.value, s.value));
        }
        emit("proto.GetDataResponse", "large-100k", new GetDataResponse(pattern(LARGE), typicalStat()));

        for (int i = 0; i < buffers.size(); i++) {
            Case<byte[]> b = buffers.get(i);
            Case<String> p = paths.get(i % paths.size());
            emit("proto.SetDataRequest", p.label + "-" + b.label + "-v" + versions[i],
                    new SetDataRequest(p.value, b.value, versions[i]));
        }

        for (Case<String> p : paths) {
            emit("proto.GetACLRequest", p.label, new GetACLRequest(p.value));
        }

        List<Case<List<ACL>>> acls = aclListCases();
        for (int i = 0; i < acls.size(); i++) {
            Case<List<ACL>> a = acls.get(i);
            Case<Stat> s = stats.get(i % stats.size());
            Case<String> p = paths.get(i % paths.size());
            emit("proto.GetACLResponse", a.label + "-" + s.label, new GetACLResponse(a.value, s.value));
            emit("proto.SetACLRequest", p.label + "-" + a.label + "-v" + versions[i],
                    new SetACLRequest(p.value, a.value, versions[i]));
        }
        emit("proto.GetACLResponse", "digest-supplementary-cesu8", new GetACLResponse(Arrays.asList(
                new ACL(ZooDefs.Perms.ALL, new Id("digest", EMOJI_USER + ":tpUq/4Pn5A64fVZyQ0gOJ8ZWqkY=")),
                new ACL(ZooDefs.Perms.READ, WORLD_ANYONE)), typicalStat()));

        List<Case<List<String>>> lists = stringListCases();
        for (int i = 0; i < lists.size(); i++) {
            Case<List<String>> l = lists.get(i);
            Case<Stat> s = stats.get(i % stats.size());
            emit("proto.GetChildrenResponse", l.label, new GetChildrenResponse(l.value));
            emit("proto.GetChildren2Response", l.label + "-" + s.label,
                    new GetChildren2Response(l.value, s.value));
        }
        emit("proto.GetChildrenResponse", "supplementary-cesu8",
                new GetChildrenResponse(Arrays.asList("ok", "\ud83d\ude00")));
        emit("proto.GetChildrenResponse", "lone-surrogates-cesu8",
                new GetChildrenResponse(LONE_SURROGATES));

        for (Case<String> p : paths) {
            emit("proto.GetAllChildrenNumberRequest", p.label, new GetAllChildrenNumberRequest(p.value));
            emit("proto.SyncRequest", p.label, new SyncRequest(p.value));
            emit("proto.SyncResponse", p.label, new SyncResponse(p.value));
            emit("proto.GetMaxChildrenRequest", p.label, new GetMaxChildrenRequest(p.value));
        }
        int[] counts = {0, 42, -1, MIN_INT, MAX_INT};
        for (int count : counts) {
            String label = count < 0 ? "minus" + -(long) count : "n" + count;
            emit("proto.GetAllChildrenNumberResponse", label, new GetAllChildrenNumberResponse(count));
            emit("proto.GetMaxChildrenResponse", label, new GetMaxChildrenResponse(count));
        }
        for (int i = 0; i < paths.size(); i++) {
            Case<String> p = paths.get(i);
            emit("proto.SetMaxChildrenRequest", p.label + "-" + versions[i],
                    new SetMaxChildrenRequest(p.value, versions[i]));
        }

        emit("proto.GetEphemeralsRequest", "all-empty", new GetEphemeralsRequest(""));
        emit("proto.GetEphemeralsRequest", "all-root", new GetEphemeralsRequest("/"));
        emit("proto.GetEphemeralsRequest", "prefix", new GetEphemeralsRequest("/app/lock-"));
        emit("proto.GetEphemeralsRequest", "null", new GetEphemeralsRequest(null));
        emit("proto.GetEphemeralsRequest", "non-ascii", new GetEphemeralsRequest(NON_ASCII));
        for (Case<List<String>> l : lists) {
            if (l.label.equals("many-1000")) {
                continue; // one list of 1000 per response type is enough; see getChildren
            }
            emit("proto.GetEphemeralsResponse", l.label, new GetEphemeralsResponse(l.value));
        }
        emit("proto.GetEphemeralsResponse", "supplementary-cesu8",
                new GetEphemeralsResponse(Arrays.asList(NON_ASCII, SUPPLEMENTARY, LONE_SURROGATE)));
    }

    // ---------------------------------------------------------------- watches, admin, auth

    private void watchesAndAdmin() throws IOException {
        List<String> paths200 = new ArrayList<>();
        for (int i = 0; i < 200; i++) {
            paths200.add(String.format("/watched/%03d", i));
        }
        List<String> three = Arrays.asList("/a", "/b", "/c");
        List<String> nonAscii = Arrays.asList(NON_ASCII, "/\u00fc");
        List<String> withNulls = Arrays.asList(null, "/x", null);
        List<String> none = Collections.emptyList();

        emit("proto.SetWatches", "typical", new SetWatches(0x100000005L, three,
                Collections.singletonList("/d"), Arrays.asList("/", "/a")));
        emit("proto.SetWatches", "all-null-min", new SetWatches(MIN_LONG, null, null, null));
        emit("proto.SetWatches", "all-empty-max", new SetWatches(MAX_LONG, none, none, none));
        emit("proto.SetWatches", "non-ascii-null-elements", new SetWatches(-1, nonAscii,
                withNulls, Collections.singletonList("")));
        emit("proto.SetWatches", "many-200", new SetWatches(0, paths200, paths200, paths200));

        emit("proto.SetWatches2", "typical", new SetWatches2(0x100000005L, three,
                Collections.singletonList("/d"), Arrays.asList("/", "/a"),
                Collections.singletonList("/p"), Collections.singletonList("/r")));
        emit("proto.SetWatches2", "all-null-min", new SetWatches2(MIN_LONG, null, null, null,
                null, null));
        emit("proto.SetWatches2", "all-empty-max", new SetWatches2(MAX_LONG, none, none, none,
                none, none));
        emit("proto.SetWatches2", "mixed-null-empty", new SetWatches2(-1, null, none, withNulls,
                nonAscii, null));
        emit("proto.SetWatches2", "many-200", new SetWatches2(0, paths200, none, none,
                paths200, paths200));

        int[] modes = {AddWatchMode.PERSISTENT.getMode(), AddWatchMode.PERSISTENT_RECURSIVE.getMode(),
                MIN_INT, MAX_INT, -1, 2};
        int[] watcherTypes = {Watcher.WatcherType.Children.getIntValue(),
                Watcher.WatcherType.Data.getIntValue(), Watcher.WatcherType.Any.getIntValue(),
                MIN_INT, MAX_INT, 0};
        List<Case<String>> paths = pathCases();
        for (int i = 0; i < paths.size(); i++) {
            Case<String> p = paths.get(i);
            emit("proto.AddWatchRequest", p.label + "-mode" + modes[i],
                    new AddWatchRequest(p.value, modes[i]));
            emit("proto.CheckWatchesRequest", p.label + "-type" + watcherTypes[i],
                    new CheckWatchesRequest(p.value, watcherTypes[i]));
            emit("proto.RemoveWatchesRequest", p.label + "-type" + watcherTypes[i],
                    new RemoveWatchesRequest(p.value, watcherTypes[i]));
        }

        emit("proto.ReconfigRequest", "incremental", new ReconfigRequest(
                "server.5=10.0.0.5:2888:3888:participant;2181", "3,4", null, -1));
        emit("proto.ReconfigRequest", "non-incremental", new ReconfigRequest(null, null,
                "server.1=a:2888:3888;2181,server.2=b:2888:3888;2181", 0x100000000L));
        emit("proto.ReconfigRequest", "all-null-min", new ReconfigRequest(null, null, null, MIN_LONG));
        emit("proto.ReconfigRequest", "all-empty-max", new ReconfigRequest("", "", "", MAX_LONG));
        emit("proto.ReconfigRequest", "non-ascii", new ReconfigRequest(
                "server.7=\u7bc0\u9ede:2888:3888", "", NON_ASCII, 0));
        emit("proto.ReconfigRequest", "supplementary-cesu8", new ReconfigRequest(
                null, null, "server.1=\ud83d\ude00:2888:3888", -1));

        emit("proto.WhoAmIResponse", "ip-and-digest", new WhoAmIResponse(Arrays.asList(
                new ClientInfo("ip", "127.0.0.1"), new ClientInfo("digest", "user"))));
        emit("proto.WhoAmIResponse", "null", new WhoAmIResponse(null));
        emit("proto.WhoAmIResponse", "empty", new WhoAmIResponse(Collections.emptyList()));
        emit("proto.WhoAmIResponse", "null-fields", new WhoAmIResponse(Arrays.asList(
                new ClientInfo(null, null), new ClientInfo("", ""))));
        emit("proto.WhoAmIResponse", "non-ascii", new WhoAmIResponse(Collections.singletonList(
                new ClientInfo("x509", "CN=\u043a\u043b\u044e\u0447,O=\u7bc0\u9ede"))));
        emit("proto.WhoAmIResponse", "supplementary-cesu8", new WhoAmIResponse(
                Collections.singletonList(new ClientInfo("sasl", "\ud83d\ude00@EXAMPLE.COM"))));

        for (Case<byte[]> b : bufferCases()) {
            emit("proto.GetSASLRequest", b.label, new GetSASLRequest(b.value));
            emit("proto.SetSASLRequest", b.label, new SetSASLRequest(b.value));
            emit("proto.SetSASLResponse", b.label, new SetSASLResponse(b.value));
        }
    }

    // ---------------------------------------------------------------- multi

    /**
     * Op offers no create2 (see the file comment): build a create and set the private type.
     * MultiOperationRecord.serialize writes the header from getType() and the body from
     * toRequestRecord(), a CreateRequest, exactly as for a create2 the server would read.
     */
    private static Op withType(Op op, int type) {
        try {
            Field field = Op.class.getDeclaredField("type");
            field.setAccessible(true);
            field.setInt(op, type);
            return op;
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("cannot set Op.type", e);
        }
    }

    private void multi() throws IOException {
        MultiOperationRecord writes = new MultiOperationRecord(Arrays.asList(
                Op.create("/m/a", utf8("a"), openAcl(), CreateMode.PERSISTENT),
                Op.create("/m/c", null, openAcl(), CreateMode.CONTAINER),
                Op.create("/m/t", new byte[0], creatorAll(), CreateMode.PERSISTENT_WITH_TTL, 60000),
                withType(Op.create("/m/s-", utf8("s"), openAcl(), CreateMode.EPHEMERAL_SEQUENTIAL),
                        ZooDefs.OpCode.create2),
                Op.delete("/m/old", -1),
                Op.setData("/m/a", allByteValues(), 3),
                Op.check("/m", 0)));
        emit("MultiRequest", "all-write-kinds", writes);

        MultiOperationRecord reads = new MultiOperationRecord(Arrays.asList(
                Op.getChildren("/m"), Op.getData("/m/a"), Op.getData(NON_ASCII)));
        emit("MultiRequest", "read-kinds", reads);

        emit("MultiRequest", "empty", new MultiOperationRecord());

        MultiOperationRecord edge = new MultiOperationRecord(Arrays.asList(
                Op.create(null, null, null, CreateMode.PERSISTENT),
                Op.create(NON_ASCII, new byte[0], Collections.emptyList(), CreateMode.EPHEMERAL),
                Op.create("", pattern(1000), mixedAcl(), CreateMode.PERSISTENT_SEQUENTIAL_WITH_TTL,
                        MAX_LONG),
                Op.delete(null, MIN_INT),
                Op.setData("", null, MAX_INT),
                Op.check(NON_ASCII, MIN_INT)));
        emit("MultiRequest", "nulls-and-extremes", edge);

        MultiOperationRecord single = new MultiOperationRecord(Collections.singletonList(
                Op.check("/lock", 12)));
        emit("MultiRequest", "single-check", single);

        MultiResponse all = new MultiResponse();
        all.add(new OpResult.CreateResult("/m/a"));
        all.add(new OpResult.CreateResult("/m/s-0000000001", typicalStat()));
        all.add(new OpResult.DeleteResult());
        all.add(new OpResult.SetDataResult(maxStat()));
        all.add(new OpResult.CheckResult());
        all.add(new OpResult.GetChildrenResult(Arrays.asList("x", "y")));
        all.add(new OpResult.GetDataResult(utf8("data"), minStat()));
        all.add(new OpResult.ErrorResult(KeeperException.Code.NONODE.intValue()));
        emit("MultiResponse", "all-result-kinds", all);

        // A failed transaction: OK before the failing op, its code, RuntimeInconsistency after.
        MultiResponse failed = new MultiResponse();
        failed.add(new OpResult.ErrorResult(0));
        failed.add(new OpResult.ErrorResult(KeeperException.Code.BADVERSION.intValue()));
        failed.add(new OpResult.ErrorResult(KeeperException.Code.RUNTIMEINCONSISTENCY.intValue()));
        emit("MultiResponse", "failed-transaction", failed);

        emit("MultiResponse", "empty", new MultiResponse());

        MultiResponse reads2 = new MultiResponse();
        reads2.add(new OpResult.GetDataResult(null, new Stat()));
        reads2.add(new OpResult.GetDataResult(new byte[0], maxStat()));
        reads2.add(new OpResult.GetChildrenResult(Collections.emptyList()));
        reads2.add(new OpResult.GetChildrenResult(null));
        reads2.add(new OpResult.GetChildrenResult(Arrays.asList(null, "\u00fc")));
        reads2.add(new OpResult.ErrorResult(KeeperException.Code.NOAUTH.intValue()));
        reads2.add(new OpResult.CreateResult(null));
        reads2.add(new OpResult.CreateResult("", minStat()));
        reads2.add(new OpResult.ErrorResult(MIN_INT));
        emit("MultiResponse", "nulls-and-extremes", reads2);

        MultiResponse surrogates = new MultiResponse();
        surrogates.add(new OpResult.CreateResult(SUPPLEMENTARY));
        surrogates.add(new OpResult.CreateResult(LONE_SURROGATE, typicalStat()));
        surrogates.add(new OpResult.GetChildrenResult(LONE_SURROGATES));
        surrogates.add(new OpResult.ErrorResult(KeeperException.Code.NONODE.intValue()));
        emit("MultiResponse", "surrogates-cesu8", surrogates);
    }

    // ---------------------------------------------------------------- main

    public static void main(String[] args) throws IOException {
        BufferedWriter out = new BufferedWriter(
                new OutputStreamWriter(System.out, StandardCharsets.US_ASCII), 1 << 16);
        out.write("# Generated by scripts/gen-vectors.sh from the ZooKeeper 3.8 reference serializer"
                + " (crates/jute/tests/conformance/java/GenerateVectors.java). Do not edit.\n");
        out.write("# Format: <jute-name> <case-label> <lowercase-hex>. Labels ending in -cesu8 hold"
                + " strings the reference writes as CESU-8 (not UTF-8); each has a twin ending in"
                + " -utf8: the same value with standard UTF-8 strings (unpaired surrogates as"
                + " U+FFFD).\n");
        GenerateVectors generator = new GenerateVectors(out);
        generator.data();
        generator.session();
        generator.nodes();
        generator.watchesAndAdmin();
        generator.multi();
        out.flush();
    }
}
